"""``gym model fetch`` through the real entry point (a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _gym(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewardgym", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.model
def test_fetch_prints_the_cached_path(model_path: Path) -> None:
    cache_root = model_path.parents[1]
    result = _gym("model", "fetch", env={"REWARDGYM_CACHE_DIR": str(cache_root)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(model_path)
    explicit = _gym("model", "fetch", "--cache-dir", str(cache_root))
    assert explicit.stdout.strip() == str(model_path)


def test_fetch_into_an_unusable_folder_is_one_error_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = _gym("model", "fetch", "--cache-dir", str(blocker))
    assert result.returncode == 1
    assert result.stderr.startswith("Error: cannot create the model cache folder")
    assert "Traceback" not in result.stderr and result.stdout == ""
