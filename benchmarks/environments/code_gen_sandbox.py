"""Per-execution cost of the code_gen sandbox: one trivial solution (one stdin/stdout test), run N times.

Prints the wall time per execution (median, p10, p90) and the CPU time of the sandbox processes per
execution (user + system of every child, from ``RUSAGE_CHILDREN``: steadier than wall time on a loaded
machine). Run as root for the ``namespaces`` mode (as CI does):

    .venv/bin/python benchmarks/environments/code_gen_sandbox.py --runs 100
    .venv/bin/python benchmarks/environments/code_gen_sandbox.py --runs 100 --concurrency 2
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import time

from rewardgym.environments.code_gen.config import CodeGenConfig
from rewardgym.environments.code_gen.grading import UnitTests, run_unit_tests
from rewardgym.environments.code_gen.sandbox import CodeSandbox


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def main(runs: int, concurrency: int) -> None:
    sandbox = CodeSandbox(CodeGenConfig(max_concurrent_executions=concurrency))
    found = await sandbox.ensure_available()
    tests = UnitTests(inputs=["2\n"], outputs=["6"])
    times: list[float] = []

    async def one() -> None:
        started = time.perf_counter()
        result, _, _ = await run_unit_tests("print(int(input()) * 3)", tests, sandbox)
        times.append(time.perf_counter() - started)
        assert result == [True], result

    await one()  # warm-up (page cache)
    times.clear()
    cpu, wall = _children_cpu(), time.perf_counter()
    for start in range(0, runs, concurrency):
        await asyncio.gather(*(one() for _ in range(min(concurrency, runs - start))))
    cpu, wall = _children_cpu() - cpu, time.perf_counter() - wall
    times.sort()
    print(
        f"{found.mode}: {runs} executions, concurrency {concurrency}: "
        f"wall median {1000 * statistics.median(times):.1f} ms"
        f" (p10 {1000 * times[runs // 10]:.1f}, p90 {1000 * times[9 * runs // 10]:.1f}); "
        f"{runs / wall:.1f} executions/s; sandbox CPU {1000 * cpu / runs:.1f} ms per execution"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.concurrency))
