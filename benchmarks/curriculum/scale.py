"""The curriculum at 10^6 tasks: next_batch(512) latency, report latency, memory and state file size.

Each step serves 512 tasks and reports a group of 8 rewards for each (the rewards of a known pool of
pass probabilities), as a trainer would; timings are per call (``time.perf_counter``) after a warm-up.
Memory is the growth of the process's resident set while the curriculum is built and run (rows are
plain indices here: the dataset's own rows live in its file, :class:`rewardgym.curriculum.rows.JsonlRows`
adds 8 bytes a task). The reference, measured in the same run, is numpy sorting 10^6 float32 — this
VM's speed drifts (~1.8×), so compare a run's numbers with its own reference.

Usage::

    .venv/bin/python benchmarks/curriculum/scale.py [--tasks 1000000] [--steps 200] [--policy expected-signal]

Targets (issue 26): next_batch(512) ≤ 5 ms p99, report ≤ 1 ms a task, ≤ 200 bytes a task, state file ≤ 100 MB.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rewardgym.curriculum import Curriculum  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) * 1000.0


def reference_ms(repeats: int = 20) -> float:
    data = np.random.default_rng(0).random(1_000_000, dtype=np.float32)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        np.sort(data)
        times.append(time.perf_counter() - started)
    return float(np.median(times)) * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--policy", default="expected-signal")
    args = parser.parse_args()
    process = psutil.Process()
    reference = reference_ms()
    rng = np.random.default_rng(1)
    p = np.where(rng.random(args.tasks) < 0.3, 0.0, rng.beta(0.6, 0.6, args.tasks))
    rewards = [[1.0] * k + [0.0] * (8 - k) for k in range(9)]
    with tempfile.TemporaryDirectory() as folder:
        before = process.memory_info().rss
        started = time.perf_counter()
        cur = Curriculum(
            args.tasks, policy=args.policy, group_size=8, state_path=Path(folder) / "state.npz",
            save_every=10**9,
        )  # fmt: skip
        built = time.perf_counter() - started
        batch_times: list[float] = []
        batch_cpu: list[float] = []
        report_times: list[float] = []
        report_cpu: list[float] = []
        for step in range(args.steps + 5):
            started, cpu = time.perf_counter(), time.thread_time()
            rows = cur.next_batch(args.batch)
            elapsed, cpu = time.perf_counter() - started, time.thread_time() - cpu
            passes = rng.binomial(8, p[[row["_ng_task_index"] for row in rows]])
            for row, k in zip(rows, passes.tolist(), strict=True):
                t0, c0 = time.perf_counter(), time.thread_time()
                cur.report(row["_ng_task_index"], rewards[k])
                if step >= 5:
                    report_times.append(time.perf_counter() - t0)
                    report_cpu.append(time.thread_time() - c0)
            if step >= 5:
                batch_times.append(elapsed)
                batch_cpu.append(cpu)
        grown = process.memory_info().rss - before
        started = time.perf_counter()
        cur.save()
        saved = time.perf_counter() - started
        size = (Path(folder) / "state.npz").stat().st_size
        cur.close()
    print(f"## Curriculum at scale: {args.tasks:,} tasks, policy {args.policy}\n")
    print("Command: `" + " ".join(["python", *sys.argv]) + "`\n")
    print(f"reference (numpy sort of 10^6 float32, median): {reference:.1f} ms\n")
    print("| measure | value | target |")
    print("|---|---:|---:|")
    print(f"| next_batch({args.batch}) wall p50 / p99 | {percentile(batch_times, 50):.2f} / "
          f"{percentile(batch_times, 99):.2f} ms | ≤ 5 ms p99 |")  # fmt: skip
    print(f"| next_batch({args.batch}) CPU p50 / p99 | {percentile(batch_cpu, 50):.2f} / "
          f"{percentile(batch_cpu, 99):.2f} ms | |")  # fmt: skip
    mean_us = np.mean(report_times) * 1e6
    print(f"| report, one task: wall p50 / p99 / mean | {percentile(report_times, 50) * 1000:.0f} / "
          f"{percentile(report_times, 99) * 1000:.0f} / {mean_us:.0f} µs | ≤ 1 ms |")  # fmt: skip
    print(f"| report, one task: CPU p50 / p99 | {percentile(report_cpu, 50) * 1000:.0f} / "
          f"{percentile(report_cpu, 99) * 1000:.0f} µs | |")  # fmt: skip
    print(f"| resident memory growth | {grown / args.tasks:.0f} bytes a task | ≤ 200 |")
    print(f"| state file | {size / 1e6:.1f} MB (snapshot written in {saved * 1000:.0f} ms) | ≤ 100 MB |")
    print(f"| construction | {built * 1000:.0f} ms | — |")


if __name__ == "__main__":
    main()
