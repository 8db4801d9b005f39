"""``gym data select --check`` on a hostile manifest (issue 22, class 5): the manifest's paths stay inside
its folder (or ``--root``) or the check is refused before any file is opened; every file is opened as a
regular file only, so a FIFO or a device can neither hang the check nor be read; a tampered setting is an
error naming the manifest, never unbounded work. Each ``gym`` runs as a real process with a generous
``timeout`` that only turns a hang into a failure (it is not a synchronisation)."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from tests.dataset.run import build_run
from tests.profile.helpers import cli, gym

SECRET_LINE = "first-line-of-a-private-file-7f3a"


@pytest.fixture
def selected(tmp_path: Path) -> Path:
    """A folder holding a run, a dataset selected from it and its manifest (all inside the folder)."""
    build_run(tmp_path / "run")
    done = cli("data", "select", str(tmp_path / "run"), "-o", str(tmp_path / "train.jsonl"))
    assert done.returncode == 0, done.stderr
    assert cli("data", "select", "--check", str(tmp_path / "train.manifest.json")).returncode == 0
    return tmp_path


def _tamper(folder: Path, change: dict[str, object]) -> Path:
    path = folder / "train.manifest.json"
    document = orjson.loads(path.read_bytes())
    for key, value in change.items():
        target = document
        *parents, last = key.split(".")
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(last) if last.isdigit() else last] = value
    path.write_bytes(orjson.dumps(document))
    return path


def test_a_link_inside_the_folder_that_points_out_is_refused_unread(
    selected: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    private = tmp_path_factory.mktemp("private") / "notes_reward_profiling.jsonl"
    private.write_text(SECRET_LINE + "\n")
    (selected / "link_reward_profiling.jsonl").symlink_to(private)
    manifest = _tamper(selected, {"inputs.0.path": "link_reward_profiling.jsonl"})
    done = gym("data", "select", "--check", str(manifest))
    assert done.returncode == 1
    assert "inputs[0].path 'link_reward_profiling.jsonl' is outside the manifest's folder" in done.stderr
    assert SECRET_LINE not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("field", ["inputs.0.path", "output.path", "sources.0.profile"])
def test_a_fifo_inside_the_folder_never_blocks_the_check(selected: Path, field: str) -> None:
    os.mkfifo(selected / "pipe.jsonl")
    manifest = _tamper(selected, {field: "pipe.jsonl"})
    done = gym("data", "select", "--check", str(manifest))  # nobody ever writes the FIFO
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "pipe.jsonl" in done.stderr


def test_a_fifo_or_device_as_the_manifest_is_refused_unread(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "m.manifest.json")
    for path in (tmp_path / "m.manifest.json", Path("/dev/zero")):
        done = gym("data", "select", "--check", str(path))
        assert done.returncode == 1
        assert done.stderr.startswith(f"Error: '{path}' (--check) is a "), done.stderr
        assert "not a regular file" in done.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"settings.stages": 10**9, "settings.schedule": "curriculum"},
            "--stages 1000000000: more stages than",
        ),
        ({"settings.stage_size": 10**9, "settings.schedule": "gaussian"}, "--stage-size 1000000000: larger"),
        ({"settings.seed": -1}, "--seed -1: a seed is an integer"),
    ],
)
def test_a_tampered_setting_is_one_error_naming_the_manifest(
    selected: Path, change: dict[str, object], message: str
) -> None:
    manifest = _tamper(selected, change)
    done = cli("data", "select", "--check", str(manifest))
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: {manifest}: settings: "), done.stderr
    assert message in done.stderr


def test_root_widens_the_trusted_folder_and_nothing_more(selected: Path) -> None:
    inner = selected / "inner"
    inner.mkdir()
    os.rename(selected / "train.jsonl", inner / "train.jsonl")
    document = orjson.loads((selected / "train.manifest.json").read_bytes())
    document["output"]["path"] = "train.jsonl"
    for entry in document["inputs"]:
        entry["path"] = os.path.join("..", entry["path"])
    for source in document["sources"]:
        for role in ("profile", "health", "run"):
            if source[role] is not None:
                source[role] = os.path.join("..", source[role])
    (inner / "train.manifest.json").write_bytes(orjson.dumps(document))
    refused = cli("data", "select", "--check", str(inner / "train.manifest.json"))
    assert refused.returncode == 1 and "is outside the manifest's folder" in refused.stderr
    done = cli("data", "select", "--check", str(inner / "train.manifest.json"), "--root", str(selected))
    assert done.returncode == 0, done.stderr
    narrower = cli("data", "select", "--check", str(inner / "train.manifest.json"), "--root", str(inner))
    assert narrower.returncode == 1 and f"is outside --root '{inner}'" in narrower.stderr
