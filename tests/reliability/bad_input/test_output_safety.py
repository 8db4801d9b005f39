"""No command destroys the user's data through its outputs (real ``gym`` processes).

An output that is one of the command's inputs — by path, through a symbolic link or a hard link — is refused
(exit 2) naming both; an existing output that is not a regular file (``/dev/null``, a FIFO, a symbolic
link) is refused (exit 1) and left as it was. In every refused case no file anywhere changes and none
appears. Also: an empty ``--input`` / empty profile is an error naming the file, and outputs respect the
umask.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.bad_input.catalogue import gym, snapshot
from tests.stubs.inprocess_stack import AGENT, Stack
from tests.stubs.processes import REPO_ROOT

NOWHERE = "http://127.0.0.1:9"
"""A model upstream nobody answers (reverify is refused before any server would call it)."""
INPUT = b'{"responses_create_params": {"input": "q"}, "agent_ref": {"name": "mcqa_simple_agent"}}\n'


def _refused(done: subprocess.CompletedProcess[str], code: int, *fragments: str) -> None:
    assert done.returncode == code, done.stdout + done.stderr
    assert done.stderr.startswith("Error: refusing to write"), done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    for fragment in fragments:
        assert fragment in done.stderr, done.stderr


def _state(folder: Path) -> tuple[dict[str, bytes], list[str]]:
    """Every regular file's bytes, and every entry (links, FIFOs and folders included)."""
    return snapshot(folder), sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "in.jsonl").write_bytes(INPUT)
    return tmp_path


@pytest.fixture
def run_args(bad_input_stack: Stack) -> list[str]:
    """``gym eval run`` against live servers: without the refusal, the run would go ahead."""
    return ["eval", "run", "--no-serve", "--head-url", bad_input_stack.head_url, "--agent", AGENT]


# --------------------------------------------------------------------------- gym eval run
@pytest.mark.parametrize(
    ("make", "output", "how"),
    [
        (None, "in.jsonl", "it is the --input file 'in.jsonl'"),
        ("symlink", "link.jsonl", "through a symbolic link"),
        ("hardlink", "hard.jsonl", "a hard link to the same file"),
    ],
)
def test_run_refuses_an_output_that_is_its_input(
    run_args: list[str], folder: Path, make: str | None, output: str, how: str
) -> None:
    if make == "symlink":
        (folder / output).symlink_to(folder / "in.jsonl")
    elif make == "hardlink":
        os.link(folder / "in.jsonl", folder / output)
    before = _state(folder)
    _refused(gym([*run_args, "--input", "in.jsonl", "-o", output], folder), 2, how)
    assert _state(folder) == before
    assert (folder / "in.jsonl").read_bytes() == INPUT


def test_run_refuses_an_input_that_is_one_of_its_sibling_outputs(run_args: list[str], folder: Path) -> None:
    (folder / "out").mkdir()
    shutil.copy(folder / "in.jsonl", folder / "out/rollouts_failures.jsonl")
    before = _state(folder)
    done = gym([*run_args, "--input", "out/rollouts_failures.jsonl", "-o", "out/rollouts.jsonl"], folder)
    _refused(done, 2, "output (written next to --output) 'out/rollouts_failures.jsonl'", "--input file")
    assert _state(folder) == before


def test_run_refuses_an_output_that_is_its_config_file(run_args: list[str], folder: Path) -> None:
    (folder / "my.yaml").write_text("limit: 1\n")
    before = _state(folder)
    done = gym([*run_args, "--config", "my.yaml", "--input", "in.jsonl", "-o", "my.yaml"], folder)
    _refused(done, 2, "it is the config file")
    assert _state(folder) == before


def test_run_refuses_dev_null_and_leaves_dev_alone(run_args: list[str], folder: Path) -> None:
    before = sorted(os.listdir("/dev"))
    done = gym([*run_args, "--input", "in.jsonl", "-o", "/dev/null"], folder)
    _refused(done, 1, "'/dev/null'", "a character device")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert sorted(os.listdir("/dev")) == before  # no lock file, no sibling output, nothing removed


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_run_refuses_an_output_that_is_not_a_regular_file(
    run_args: list[str], folder: Path, kind: str
) -> None:
    (folder / "out").mkdir()
    target = folder / "out/rollouts.jsonl"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        (folder / "elsewhere.jsonl").write_bytes(b"kept\n")
        target.symlink_to(folder / "elsewhere.jsonl")
    before = _state(folder)
    done = gym([*run_args, "--input", "in.jsonl", "-o", "out/rollouts.jsonl"], folder)
    _refused(done, 1, "a FIFO" if kind == "fifo" else "a symbolic link")
    assert stat.S_ISFIFO(os.lstat(target).st_mode) if kind == "fifo" else target.is_symlink()
    assert _state(folder) == before


# --------------------------------------------------------------------------- gym eval reverify
@pytest.mark.parametrize("same", ["path", "hardlink"])
def test_reverify_in_place_is_refused_and_keeps_the_collection(
    previous_run: Path, tmp_path: Path, same: str
) -> None:
    shutil.copytree(previous_run, tmp_path, dirs_exist_ok=True)
    output = "out/rollouts.jsonl"
    if same == "hardlink":
        output = "out/rescored.jsonl"
        os.link(tmp_path / "out/rollouts.jsonl", tmp_path / output)
    before = _state(tmp_path)
    done = gym(
        ["eval", "reverify", "--resources-server", "mcqa", "--model-type", "openai_model",
         "--model-url", f"{NOWHERE}/v1", "--model", "m", "--model-api-key", "unused-key",
         "--inputs", "out/rollouts_materialized_inputs.jsonl", "--rollouts", "out/rollouts.jsonl",
         "-o", output, "--overwrite"],
        tmp_path,
    )  # fmt: skip
    _refused(done, 2, "it is the --rollouts file 'out/rollouts.jsonl'")
    assert _state(tmp_path) == before
    assert len((tmp_path / "out/rollouts.jsonl").read_bytes().splitlines()) == 6
    assert not (tmp_path / "out/logs").exists()  # refused before any server started


# --------------------------------------------------------------------------- gym eval aggregate
def test_aggregate_refuses_an_output_hard_linked_to_a_shard(
    bad_input_stack: Stack, previous_run: Path, tmp_path: Path
) -> None:
    shutil.copy(previous_run / "out/rollouts.jsonl", tmp_path / "shard-1.jsonl")
    os.link(tmp_path / "shard-1.jsonl", tmp_path / "merged.jsonl")
    before = _state(tmp_path)
    args = ["eval", "aggregate", "--input", "shard-*.jsonl", "-o", "merged.jsonl"]
    done = gym([*args, "--head-url", bad_input_stack.head_url], tmp_path)
    _refused(done, 2, "--input shard file", "a hard link to the same file")
    assert _state(tmp_path) == before


# --------------------------------------------------------------------------- gym eval profile
@pytest.mark.parametrize("kind", ["input", "hardlink", "fifo"])
def test_profile_refuses_outputs_that_are_inputs_or_not_regular(
    previous_run: Path, tmp_path: Path, kind: str
) -> None:
    shutil.copytree(previous_run / "out", tmp_path, dirs_exist_ok=True)
    for name in ("rollouts_reward_profiling.jsonl", "rollouts_agent_metrics.json"):
        (tmp_path / name).unlink()
    inputs = "rollouts_materialized_inputs.jsonl"
    if kind == "input":  # the inputs file named like the profile's per-task output
        os.rename(tmp_path / inputs, tmp_path / "rollouts_reward_profiling.jsonl")
        inputs = "rollouts_reward_profiling.jsonl"
    elif kind == "hardlink":
        os.link(tmp_path / inputs, tmp_path / "rollouts_agent_metrics.json")
    else:
        os.mkfifo(tmp_path / "rollouts_agent_metrics.json")
    before = _state(tmp_path)
    done = gym(["eval", "profile", "--inputs", inputs, "--rollouts", "rollouts.jsonl"], tmp_path)
    if kind == "fifo":
        _refused(done, 1, "rollouts_agent_metrics.json", "a FIFO")
        assert stat.S_ISFIFO(os.lstat(tmp_path / "rollouts_agent_metrics.json").st_mode)
    else:
        _refused(done, 2, "it is the --inputs file")
    assert _state(tmp_path) == before


# --------------------------------------------------------------------------- empty inputs
def test_an_empty_input_is_an_error_naming_it(bad_input_stack: Stack, tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    done = gym(
        ["eval", "run", "--no-serve", "--head-url", bad_input_stack.head_url, "--agent", AGENT,
         "--input", "empty.jsonl", "-o", "out/rollouts.jsonl"],
        tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "Error: Input file 'empty.jsonl' (--input) holds no rows: there is nothing to collect" in done.stderr
    )
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["empty.jsonl"]


def test_an_all_masked_profile_says_so(previous_run: Path, tmp_path: Path) -> None:
    shutil.copytree(previous_run / "out", tmp_path, dirs_exist_ok=True)
    rows = (tmp_path / "rollouts.jsonl").read_bytes().splitlines()
    (tmp_path / "rollouts.jsonl").write_bytes(b"".join(r[:-1] + b', "mask_sample": true}\n' for r in rows))
    done = gym(
        ["eval", "profile", "--inputs", "rollouts_materialized_inputs.jsonl", "--rollouts", "rollouts.jsonl"],
        tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No measured rollouts: all 6 rollouts are masked" in done.stdout
    assert (tmp_path / "rollouts_reward_profiling.jsonl").read_bytes() == b""


# --------------------------------------------------------------------------- umask
def _gym_with_umask(umask: int, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "rewardgym", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=lambda: os.umask(umask),  # only os.umask between fork and exec
    )


def test_every_output_respects_the_umask(bad_input_stack: Stack, folder: Path) -> None:
    lines = (REPO_ROOT / "src/rewardgym/environments/mcqa/data/example.jsonl").read_bytes().splitlines()
    (folder / "in.jsonl").write_bytes(b"\n".join(lines[:2]) + b"\n")
    run = ["eval", "run", "--no-serve", "--head-url", bad_input_stack.head_url, "--agent", AGENT,
           "--input", "in.jsonl", "-o", "out/rollouts.jsonl"]  # fmt: skip
    profile = ["eval", "profile", "--inputs", "out/rollouts_materialized_inputs.jsonl", "--rollouts",
               "out/rollouts.jsonl"]  # fmt: skip
    for umask, mode in ((0o022, 0o644), (0o027, 0o640)):
        for args in (run, profile):
            done = _gym_with_umask(umask, args, folder)
            assert done.returncode == 0, done.stdout + done.stderr
        written = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (folder / "out").iterdir() if p.is_file()}
        assert set(written) == {
            "rollouts.jsonl", "rollouts_materialized_inputs.jsonl", "rollouts_failures.jsonl",
            "rollouts_aggregate_metrics.json", "rollouts_run.json", "rollouts_reward_profiling.jsonl",
            "rollouts_agent_metrics.json", "rollouts_repeat_level_metrics.json",
            "rollouts_quality_summary.json", "rollouts_rollout_verdicts.jsonl",
        }  # fmt: skip
        assert written == dict.fromkeys(written, mode), (oct(umask), written)
        shutil.rmtree(folder / "out")
