"""Bad input to ``gym eval profile``: one ``Error:`` line naming the file and line (or key), exit 1, no
traceback, and no output file written or changed."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.profile.helpers import CliRun, cli, gym, rows_and_results, write_jsonl


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    rows, results = rows_and_results({0: [1.0, 0.0], 1: [0.5, 1.0]})
    return write_jsonl(tmp_path / "x_materialized_inputs.jsonl", rows), write_jsonl(
        tmp_path / "x.jsonl", results
    )


def _outputs(folder: Path) -> list[str]:
    return sorted(
        p.name
        for p in folder.iterdir()
        if "_reward_profiling" in p.name or "_metrics" in p.name or p.name.startswith(".")
    )


def _fails(run: subprocess.CompletedProcess[str] | CliRun, *fragments: str, code: int = 1) -> str:
    assert run.returncode == code, (run.stdout, run.stderr)
    assert run.stderr.startswith("Error: "), run.stderr
    assert "Traceback" not in run.stderr
    for fragment in fragments:
        assert fragment in run.stderr, run.stderr
    return run.stderr


def _profile(inputs: Path, rollouts: Path, *extra: str) -> CliRun:
    return cli("eval", "profile", "--inputs", str(inputs), "--rollouts", str(rollouts), *extra)


def test_errors_in_a_real_process_have_no_traceback(files: tuple[Path, Path], tmp_path: Path) -> None:
    inputs, _ = files
    run = gym("eval", "profile", "--inputs", str(inputs), "--rollouts", str(tmp_path / "missing.jsonl"))
    _fails(run, "Input file not found", "(--rollouts)")


def test_missing_file(files: tuple[Path, Path], tmp_path: Path) -> None:
    inputs, rollouts = files
    _fails(
        _profile(tmp_path / "nope.jsonl", rollouts),
        f"Input file not found: '{tmp_path / 'nope.jsonl'}' (--inputs)",
    )
    _fails(_profile(inputs, tmp_path / "gone.jsonl"), "(--rollouts)")
    assert _outputs(tmp_path) == []


def test_directory_instead_of_file(files: tuple[Path, Path], tmp_path: Path) -> None:
    inputs, _ = files
    _fails(_profile(inputs, tmp_path), "is a directory")


@pytest.fixture
def world_readable_dir() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="rg-profile-perm-"))
    folder.chmod(0o777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_unreadable_file(world_readable_dir: Path) -> None:
    rows, results = rows_and_results({0: [1.0]})
    inputs = write_jsonl(world_readable_dir / "u_materialized_inputs.jsonl", rows)
    rollouts = write_jsonl(world_readable_dir / "u.jsonl", results)
    rollouts.chmod(0)
    inputs.chmod(0o644)
    user = 65534 if os.geteuid() == 0 else None  # root reads anything: drop to 'nobody' for this check
    if (
        user is not None
        and not Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}").exists()
    ):
        pytest.skip("no system interpreter of this Python version to run as another user")
    try:
        run = gym(
            "eval",
            "profile",
            "--inputs",
            str(inputs),
            "--rollouts",
            str(rollouts),
            user=user,
            cwd=world_readable_dir,
        )
    except PermissionError:
        pytest.skip("the interpreter is not accessible to another user here")
    if "ModuleNotFoundError" in run.stderr:
        pytest.skip("this environment's packages are not readable by another user")
    _fails(run, "is not readable (permission denied)", "(--rollouts)")


def test_malformed_line_names_file_and_line(files: tuple[Path, Path]) -> None:
    inputs, rollouts = files
    lines = rollouts.read_bytes().splitlines(keepends=True)
    lines[2] = b'{"reward": 1.0, "_ng_task_index": 1,\n'
    rollouts.write_bytes(b"".join(lines))
    _fails(_profile(inputs, rollouts), f"{rollouts}:3: malformed JSON")


def test_blank_line(files: tuple[Path, Path]) -> None:
    inputs, rollouts = files
    lines = inputs.read_bytes().splitlines(keepends=True)
    inputs.write_bytes(lines[0] + b"\n" + b"".join(lines[1:]))
    _fails(_profile(inputs, rollouts), f"{inputs}:2: blank line")


def test_line_that_is_not_an_object(files: tuple[Path, Path]) -> None:
    inputs, rollouts = files
    rollouts.write_bytes(rollouts.read_bytes() + b"[1, 2]\n")
    _fails(_profile(inputs, rollouts), f"{rollouts}:5: expected a JSON object")


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"_ng_rollout_index": None}, "'_ng_rollout_index' must be an integer, got null"),
        ({"_ng_task_index": "3"}, "'_ng_task_index' must be an integer, got '3'"),
        ({"_ng_task_index": True}, "'_ng_task_index' must be an integer, got True"),
        ({"_ng_task_index": 1.0}, "'_ng_task_index' must be an integer, got 1.0"),
        ({"_ng_task_index": 2**63}, "out of the 64-bit integer range"),
    ],
)
def test_bad_index(files: tuple[Path, Path], patch: dict[str, object], message: str) -> None:
    import orjson

    inputs, rollouts = files
    rows = [orjson.loads(line) for line in inputs.read_bytes().splitlines()]
    rows[3].update(patch)
    write_jsonl(inputs, rows)
    _fails(_profile(inputs, rollouts), f"{inputs}:4: ", message)


def test_missing_index_key(files: tuple[Path, Path]) -> None:
    import orjson

    inputs, rollouts = files
    rows = [orjson.loads(line) for line in rollouts.read_bytes().splitlines()]
    del rows[1]["_ng_task_index"]
    write_jsonl(rollouts, rows)
    _fails(_profile(inputs, rollouts), f"{rollouts}:2: missing '_ng_task_index'")


def test_duplicate_key_in_inputs(files: tuple[Path, Path]) -> None:
    inputs, rollouts = files
    lines = inputs.read_bytes().splitlines(keepends=True)
    inputs.write_bytes(b"".join([*lines, lines[1]]))
    _fails(
        _profile(inputs, rollouts),
        "Duplicate materialized input row for rollout key (0, 1)",
        f"'{inputs}' lines 2 and 5",
    )


def test_duplicate_key_in_rollouts(files: tuple[Path, Path]) -> None:
    inputs, rollouts = files
    lines = rollouts.read_bytes().splitlines(keepends=True)
    rollouts.write_bytes(b"".join([lines[3], *lines]))
    _fails(
        _profile(inputs, rollouts),
        "Duplicate result row for rollout key (1, 1)",
        f"'{rollouts}' lines 1 and 5",
    )


def test_extra_rollouts_are_always_an_error(files: tuple[Path, Path], tmp_path: Path) -> None:
    inputs, rollouts = files
    lines = inputs.read_bytes().splitlines(keepends=True)
    inputs.write_bytes(b"".join(lines[:3]))
    for extra in ((), ("--allow-partial-rollouts",)):
        _fails(
            _profile(inputs, rollouts, *extra),
            "Rollout results contain rows with no matching materialized input rows. ",
            "Found 1 extra rollout rows. Extra rollout keys: [(1, 1)]",
            f"'{rollouts}:4'",
        )
    assert _outputs(tmp_path) == []


def test_strict_mismatch_suggests_partial_mode(files: tuple[Path, Path], tmp_path: Path) -> None:
    inputs, rollouts = files
    lines = rollouts.read_bytes().splitlines(keepends=True)
    rollouts.write_bytes(b"".join(lines[:3]))
    err = _fails(
        _profile(inputs, rollouts),
        "Missing rollout results for 1 materialized input rows. Missing rollout keys: [(1, 1)].",
        "Use ++allow_partial_rollouts=True",
    )
    assert err.count("Error:") == 1
    assert _outputs(tmp_path) == []
    for flag in (
        "--allow-partial-rollouts",
        "++allow_partial_rollouts=True",
        "+allow_partial_rollouts=true",
        "++allow_partial_rollouts=1",
    ):
        run = _profile(inputs, rollouts, flag)
        assert run.returncode == 0, run.stderr
        assert "Reward profile completion: 3/4 rollout rows (75.00%)" in run.stdout
        assert (
            "Input rows: 2 total; 1 complete; 1 partial; 0 without rollouts dropped from output."
            in run.stdout
        )


def test_files_given_in_the_wrong_role(files: tuple[Path, Path]) -> None:
    inputs, rollouts = files
    _fails(
        _profile(rollouts, inputs),
        f"{rollouts}:1: this row has a 'response' field",
        "did you swap --inputs and --rollouts?",
    )
    _fails(_profile(inputs, inputs), f"'{inputs}' (--rollouts) has no 'response' or 'reward'", "did you swap")


def test_bad_override_is_a_usage_error(files: tuple[Path, Path]) -> None:
    inputs, rollouts = files
    _fails(_profile(inputs, rollouts, "++unknown=1"), "unknown override '++unknown=1'", code=2)
    _fails(_profile(inputs, rollouts, "++allow_partial_rollouts=maybe"), "expects true or false", code=2)
    _fails(
        _profile(inputs, rollouts, "--allow-partial"),
        "unknown argument '--allow-partial'",
        "did you mean",
        code=2,
    )


def _make_unwritable(folder: Path) -> bool:
    if os.geteuid() != 0:
        folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
        return True
    chattr = shutil.which("chattr")
    return (
        chattr is not None
        and subprocess.run([chattr, "+i", str(folder)], check=False, capture_output=True).returncode == 0
    )


def _restore(folder: Path) -> None:
    if os.geteuid() != 0:
        folder.chmod(0o755)
    else:
        subprocess.run(["chattr", "-i", str(folder)], check=False, capture_output=True)


def test_output_folder_not_writable(files: tuple[Path, Path], tmp_path: Path) -> None:
    inputs, rollouts = files
    if not _make_unwritable(tmp_path):
        pytest.skip("cannot make a folder unwritable here (root without chattr)")
    try:
        _fails(_profile(inputs, rollouts), "not writable", str(tmp_path))
    finally:
        _restore(tmp_path)
    assert _outputs(tmp_path) == []


def test_no_output_is_replaced_when_writing_fails(files: tuple[Path, Path], tmp_path: Path) -> None:
    inputs, rollouts = files
    (tmp_path / "x_reward_profiling.jsonl").write_text("old\n")
    (tmp_path / "x_repeat_level_metrics.json").mkdir()  # a directory in the way of the last file
    _fails(_profile(inputs, rollouts), "x_repeat_level_metrics.json")
    assert (tmp_path / "x_reward_profiling.jsonl").read_text() == "old\n"
    assert not (tmp_path / "x_agent_metrics.json").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp files left behind


def test_an_empty_collection_is_an_error_not_empty_outputs(files: tuple[Path, Path], tmp_path: Path) -> None:
    """Nothing to profile is said, not written: empty inputs, or no rollouts at all (even when partial)."""
    inputs, rollouts = files
    empty = tmp_path / "e.jsonl"
    empty.write_bytes(b"")
    _fails(_profile(empty, rollouts), "e.jsonl' (--inputs) holds no rows: there is nothing to profile")
    stderr = _fails(
        _profile(inputs, empty, "--allow-partial-rollouts"), "e.jsonl' (--rollouts) holds no rollouts"
    )
    assert "4 input rows are all still missing" in stderr
    assert _outputs(tmp_path) == []
