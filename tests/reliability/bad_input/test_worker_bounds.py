"""A huge ``--concurrency`` over a few rows starts one worker per row left, not 10^6.

Before the fix, ``--concurrency 1000000`` on 15 rows made 10^6 coroutines (35 s, 1 GB). Now the dispatcher
starts a worker per row it pulls, up to ``concurrency``: ``min(concurrency, rows left)``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rewardgym.collect.dispatch import Dispatcher, Pending
from rewardgym.collect.failures import RetryPolicy
from tests.conftest import REPO_ROOT
from tests.reliability.bad_input.conftest import MCQA_EXAMPLES
from tests.stubs.inprocess_stack import AGENT, Stack


def test_the_dispatcher_starts_one_worker_per_row_up_to_concurrency() -> None:
    async def main(rows: int, concurrency: int) -> tuple[int, int, int]:
        peak = 0
        done: list[int] = []

        async def send(row: dict[str, Any]) -> dict[str, Any]:
            nonlocal peak
            peak = max(peak, len(asyncio.all_tasks()))
            await asyncio.sleep(0)
            return {"reward": 1.0}

        dispatcher = Dispatcher(
            send,
            concurrency=concurrency,
            policy=RetryPolicy(),
            on_success=lambda row, _result: done.append(row["_ng_task_index"]),
            on_failure=lambda *_: None,
        )
        pending = (Pending({"_ng_task_index": i, "_ng_rollout_index": 0}) for i in range(rows))
        await dispatcher.run(pending)
        assert sorted(done) == list(range(rows))
        return dispatcher.workers_started, peak, len(done)

    started, peak, done = asyncio.run(main(15, 1_000_000))
    assert (started, done) == (15, 15)
    assert peak <= 15 + 3  # the workers, the grace watcher, main
    assert asyncio.run(main(100, 8))[0] == 8  # still bounded by concurrency when rows outnumber it


def test_no_rows_left_starts_no_worker() -> None:
    async def main() -> int:
        async def send(row: dict[str, Any]) -> dict[str, Any]:
            raise AssertionError("no row to send")

        dispatcher = Dispatcher(
            send, concurrency=1_000_000, policy=RetryPolicy(), on_success=lambda *_: None,
            on_failure=lambda *_: None,
        )  # fmt: skip
        await dispatcher.run(iter([]))
        return dispatcher.workers_started

    assert asyncio.run(main()) == 0


def _peak_rss_kib(pid: int) -> int:
    """The process's own high-water RSS (``VmHWM``), 0 once it is gone. Not ``wait4``'s ``ru_maxrss``: Linux
    carries the forking parent's peak into the child's at ``exec``, so a child of a big pytest process
    would report pytest's size."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def _run_measured(args: list[str], cwd: Path) -> tuple[int, str, float, int]:
    """Run ``gym args`` as a real process: (exit code, output, wall s, peak RSS KiB of that process)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"}
    log = cwd / "gym.log"
    start = time.monotonic()
    peak = 0
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rewardgym", *args],
            cwd=cwd,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        # Sample the high-water mark until the process ends (it only grows; the last sample is the peak
        # up to a few milliseconds before exit, after the rows were dispatched).
        while proc.poll() is None:
            peak = max(peak, _peak_rss_kib(proc.pid))
            try:
                proc.wait(timeout=0.02)
            except subprocess.TimeoutExpired:
                continue
    return proc.returncode, log.read_text(), time.monotonic() - start, peak


def test_a_million_concurrency_on_15_rows_runs_15_workers(bad_input_stack: Stack, tmp_path: Path) -> None:
    lines = MCQA_EXAMPLES.read_text(encoding="utf-8").splitlines(keepends=True)[:5]
    (tmp_path / "in.jsonl").write_text("".join(lines), encoding="utf-8")
    code, output, wall_s, rss_kib = _run_measured(
        ["eval", "run", "--no-serve", "--head-url", bad_input_stack.head_url, "--input", "in.jsonl",
         "--agent", AGENT, "--num-repeats", "3", "--concurrency", "1000000", "-o", "out/rollouts.jsonl"],
        tmp_path,
    )  # fmt: skip
    assert code == 0, output
    assert "Querying with 15 concurrent requests" in output
    assert len((tmp_path / "out/rollouts.jsonl").read_bytes().splitlines()) == 15
    # 10^6 coroutines took 35 s and 1 GB; 15 workers are an ordinary small run (~1-3 s, ~80 MiB).
    assert 10 * 1024 < rss_kib < 250 * 1024, f"peak RSS {rss_kib // 1024} MiB"
    assert wall_s < 30, f"{wall_s:.1f} s"
