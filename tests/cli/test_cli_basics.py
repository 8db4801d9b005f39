"""The gym entry point: version, help, unknown tokens — exit codes and one-line errors."""

from __future__ import annotations

import subprocess
import sys

from rewardgym import __version__


def _gym(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewardgym", *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_version() -> None:
    result = _gym("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"rewardgym {__version__}"


def test_help_lists_groups() -> None:
    result = _gym("--help")
    assert result.returncode == 0
    for group in ("env", "eval", "config"):
        assert group in result.stdout


def test_unknown_command_is_usage_error_without_traceback() -> None:
    result = _gym("bogus")
    assert result.returncode == 2
    assert result.stderr.startswith("Error: No such command 'bogus'")
    assert "Traceback" not in result.stderr
