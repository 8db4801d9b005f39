"""Fixtures of the bad-input catalogue: the in-process stack and one finished earlier run to start from."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability.bad_input.catalogue import gym
from tests.stubs.inprocess_stack import AGENT, Stack, start_stack

MCQA_EXAMPLES = Path(__file__).resolve().parents[3] / "src/rewardgym/environments/mcqa/data/example.jsonl"


@pytest.fixture(scope="session")
def bad_input_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Every server on a real 127.0.0.1 port, shared by the catalogue's cases (none changes its state)."""
    stack = start_stack(log_dir=str(tmp_path_factory.mktemp("bad-input-logs")))
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="session")
def previous_run(bad_input_stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding in.jsonl and out/ of a finished run (3 tasks x 2 repeats) that was then profiled."""
    folder = tmp_path_factory.mktemp("previous-run")
    lines = MCQA_EXAMPLES.read_text(encoding="utf-8").splitlines(keepends=True)[:3]
    (folder / "in.jsonl").write_text("".join(lines), encoding="utf-8")
    run = gym(
        ["eval", "run", "--no-serve", "--head-url", bad_input_stack.head_url, "--input", "in.jsonl",
         "--agent", AGENT, "--num-repeats", "2", "-o", "out/rollouts.jsonl"],
        folder,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    profile = gym(
        ["eval", "profile", "--inputs", "out/rollouts_materialized_inputs.jsonl",
         "--rollouts", "out/rollouts.jsonl"],
        folder,
    )  # fmt: skip
    assert profile.returncode == 0, profile.stdout + profile.stderr
    assert len((folder / "out/rollouts.jsonl").read_bytes().splitlines()) == 6
    return folder
