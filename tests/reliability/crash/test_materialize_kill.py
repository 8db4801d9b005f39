"""``kill -9`` of ``gym eval run`` while it materializes leaves a temp file the next run removes.

A real ``gym eval run --no-serve`` (servers of the in-process stack on 127.0.0.1) materializes 250,000
distinct rows × 4 repeats; it is killed with SIGKILL while the materialized file's temp file grows. That
temp file (``.rollouts_materialized_inputs.jsonl.rgtmp-<pid>-…``) is still there; the next run on the same
``--output`` removes it (and leaves nothing else behind) and completes.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from rewardgym.io.outputs import MARKER
from tests.stubs.inprocess_stack import AGENT, Stack, start_stack
from tests.stubs.processes import GymProcess, new_marker, poll

ROWS = 250_000


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    running = start_stack(log_dir=str(tmp_path_factory.mktemp("materialize-kill-logs")))
    try:
        yield running
    finally:
        running.stop()


def test_a_killed_materialization_leaves_a_temp_file_the_next_run_removes(
    stack: Stack, tmp_path: Path
) -> None:
    with open(tmp_path / "big.jsonl", "wb") as handle:
        for i in range(ROWS):
            handle.write(orjson.dumps({"responses_create_params": {"input": f"question {i}"}}) + b"\n")
    common = ["eval", "run", "--no-serve", "--head-url", stack.head_url, "--agent", AGENT,
              "-o", "out/rollouts.jsonl", "--disable-aggregation"]  # fmt: skip
    gym = GymProcess(
        [*common, "--input", "big.jsonl", "--num-repeats", "4"], cwd=tmp_path, marker=new_marker()
    )
    out = tmp_path / "out"

    def growing() -> list[Path]:
        found = (
            list(out.glob(f".rollouts_materialized_inputs.jsonl{MARKER}{gym.pid}-*")) if out.is_dir() else []
        )
        return [p for p in found if p.stat().st_size > 1 << 20]

    assert poll(lambda: growing() or not gym.running, timeout=120, interval=0.002), gym.text
    assert gym.running, f"the run ended before it could be killed mid-materialization:\n{gym.text}"
    os.kill(gym.pid, signal.SIGKILL)
    gym.proc.wait()
    leftover = growing()
    assert leftover and not (out / "rollouts_materialized_inputs.jsonl").exists()

    (tmp_path / "small.jsonl").write_bytes(b"".join((tmp_path / "big.jsonl").open("rb").readlines()[:2]))
    again = GymProcess([*common, "--input", "small.jsonl"], cwd=tmp_path, marker=new_marker())
    assert again.finish(timeout=120) == 0, again.text
    assert not leftover[0].exists()
    assert sorted(p.name for p in out.iterdir() if p.name != "logs") == [
        "rollouts.jsonl", "rollouts_failures.jsonl", "rollouts_materialized_inputs.jsonl",
        "rollouts_quality_summary.json", "rollouts_rollout_verdicts.jsonl", "rollouts_run.json",
    ]  # fmt: skip
    assert len((out / "rollouts.jsonl").read_bytes().splitlines()) == 2
