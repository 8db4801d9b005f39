"""Where ``gym eval profile``'s time goes: wall and CPU time of each phase, parent and workers apart.

Runs the phases of :func:`rewardgym.profile.profile_files` one after the other on a generated folder (see
``generate.py``) and prints, per phase, the wall time, the parent's CPU time and the CPU time of the worker
processes that phase used (they are reaped when the phase ends). Outputs go to a temporary folder; the
per-task file is compared with the one ``gym eval profile`` wrote into the folder, when there is one.

Usage: ``python benchmarks/profile/phases.py /tmp/profile-bench/n1000000``
"""

from __future__ import annotations

import argparse
import filecmp
import os
import resource
import tempfile
import time
import warnings
from pathlib import Path


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, children.ru_utime + children.ru_stime


class _Clock:
    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = _cpu()

    def mark(self, phase: str) -> None:
        wall, cpu = time.perf_counter(), _cpu()
        print(
            f"{phase:<22} wall {wall - self.wall:6.2f} s   parent CPU {cpu[0] - self.cpu[0]:6.2f} s   "
            f"workers CPU {cpu[1] - self.cpu[1]:6.2f} s",
            flush=True,
        )
        self.wall, self.cpu = wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="holds bench_materialized_inputs.jsonl and bench.jsonl")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the profile's own UserWarnings are not what is measured here
    started = time.perf_counter()
    clock = _Clock()
    from rewardgym.profile.compute import profiler
    from rewardgym.profile.read import reader
    from rewardgym.profile.tuning import Tuning
    from rewardgym.profile.write import output

    clock.mark("import")
    inputs, rollouts = args.folder / "bench_materialized_inputs.jsonl", args.folder / "bench.jsonl"
    tuning = Tuning()
    input_columns, result_columns = reader.read_files(inputs, rollouts, tuning)
    clock.mark("read + merge")
    part = profiler.prepare_profile(
        input_columns,
        result_columns,
        inputs_path=str(inputs),
        results_path=str(rollouts),
        allow_partial=False,
        threads=tuning.worker_count(),
    )
    clock.mark("prepare_profile")
    with tempfile.TemporaryDirectory(prefix="profile-phases-", dir=args.folder) as folder:
        paths = output.output_paths(Path(folder) / "bench.jsonl")
        output.write_outputs(part, result_columns, paths, inputs, input_columns, tuning)
        clock.mark("finish + write outputs")
        reference = args.folder / "bench_reward_profiling.jsonl"
        if reference.exists():
            same = filecmp.cmp(reference, paths.reward_profiling, shallow=False)
            print(f"per-task file identical to {reference.name}: {same}")
    total = sum(_cpu())
    print(
        f"total wall {time.perf_counter() - started:.2f} s, CPU {total:.2f} s, load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
