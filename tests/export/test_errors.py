"""Bad input to ``gym eval export``: one ``Error:`` line naming file:line, exit 1 (2 for usage), and
nothing written — no table, no temp file, earlier tables untouched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.export.run import build_run
from tests.profile.helpers import gym


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pristine")
    build_run(folder)
    return folder


@pytest.fixture
def run(pristine: Path, tmp_path: Path) -> Path:
    for path in pristine.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    return tmp_path


def _export(run: Path, *extra: str) -> tuple[int, str, dict[str, bytes]]:
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    done = gym("eval", "export", "--rollouts", str(run / "run.jsonl"), *extra)
    after = {p.name: p.read_bytes() for p in run.iterdir()}
    assert done.stdout == "" or done.returncode == 0
    if done.returncode != 0:
        assert after == before, "a failed export changed or added files"
    return done.returncode, done.stderr, after


def _append(path: Path, line: bytes) -> int:
    """Append ``line``; return its 1-based line number."""
    data = path.read_bytes()
    path.write_bytes(data + line + b"\n")
    return data.count(b"\n") + 1


def test_missing_profile_says_to_profile_first(run: Path) -> None:
    (run / "run_reward_profiling.jsonl").unlink()
    code, err, _ = _export(run, "--inputs", str(run / "run_materialized_inputs.jsonl"))
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("Error: no profile beside the rollouts")
    assert f"run 'gym eval profile --inputs {run / 'run_materialized_inputs.jsonl'} --rollouts" in err


@pytest.mark.parametrize(
    ("name", "line", "message"),
    [
        ("run.jsonl", b'{"_ng_task_index": 1', "malformed JSON"),
        (
            "run.jsonl",
            b'{"_ng_task_index": 1, "_ng_rollout_index": "x"}',
            "'_ng_rollout_index' must be an integer",
        ),
        ("run_failures.jsonl", b"[1, 2]", "expected a JSON object"),
        (
            "run_failures.jsonl",
            b'{"_ng_task_index": 0, "_ng_failure_class": "timeout"}',
            "missing '_ng_rollout_index'",
        ),
        ("run_reward_profiling.jsonl", b"{oops", ""),
    ],
)
def test_a_bad_line_is_named_and_nothing_is_written(run: Path, name: str, line: bytes, message: str) -> None:
    (run / "run_tasks.parquet").write_bytes(b"an earlier export")
    number = _append(run / name, line)
    code, err, after = _export(run)
    assert code == 1 and err.count("\n") == 1, err
    assert err.startswith(f"Error: {run / name}:{number}: ") and message in err, err
    assert after["run_tasks.parquet"] == b"an earlier export"


def test_a_damaged_analysis_file_is_named(run: Path) -> None:
    (run / "run_analysis.json").write_bytes(b'{\n  "per_task": {\n    "n": [1, 2\n')
    code, err, _ = _export(run)
    assert code == 1 and err.startswith(f"Error: {run / 'run_analysis.json'}:4: malformed JSON"), err
    (run / "run_analysis.json").write_bytes(b'{"per_task": {"n": [1, 2], "passes": [1]}}')
    code, err, _ = _export(run)
    assert code == 1 and "'per_task' fields must be lists of one length" in err, err


def test_an_output_that_is_an_input_is_refused(run: Path) -> None:
    os.link(run / "run.jsonl", run / "run_tasks.csv")
    code, err, _ = _export(run, "--format", "csv")
    assert code == 2 and "refusing to write tasks table" in err and "hard link" in err, err
    assert (run / "run_tasks.csv").read_bytes() == (run / "run.jsonl").read_bytes()


def test_usage_errors(run: Path) -> None:
    code, err, _ = _export(run, "--format", "xlsx")
    assert code == 2 and err.startswith("Error: ") and "xlsx" in err
    (run / "afile").write_bytes(b"")
    code, err, _ = _export(run, "--out", str(run / "afile"))
    assert code == 1 and "is not a folder" in err
    code, err, _ = _export(run, "--inputs", str(run / "nope.jsonl"))
    assert code == 1 and "Input file not found" in err and "--inputs" in err
    done = gym("eval", "export", "--rollouts", str(run / "nope.jsonl"))
    assert done.returncode == 1 and "Input file not found" in done.stderr
