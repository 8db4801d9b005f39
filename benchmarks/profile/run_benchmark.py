"""Time ``gym eval profile`` on generated files: wall time, peak RSS, rows/s and the orjson baseline ratio.

For each size (rollouts = tasks × repeats) the files are generated once into ``--workdir`` (seeded, so
reruns reuse them), then:

1. **baseline**: one plain pass of ``orjson.loads`` over every line of both files (one process);
2. **profile**: ``gym eval profile --inputs … --rollouts …`` in a fresh process, as a user runs it.
   Memory is reported three ways: the profiler process's peak RSS (``ru_maxrss``), the largest worker's
   peak RSS (forked workers share the parent's pages, which their RSS counts again), and the sampled peak
   of the summed PSS of all processes (every 50 ms, with psutil) — the physical memory actually used.

Usage::

    python benchmarks/profile/run_benchmark.py --sizes 4000,40000,400000,1000000 --workdir /tmp/profile-bench
    python benchmarks/profile/run_benchmark.py --sizes 1000000 --repeat 5 --idle-wait 120   # on a shared box

The profiler uses every core, so anything else running shows up directly in its wall time: on a shared
machine, ``--idle-wait`` waits for the CPUs to be idle before each measurement (and reports how busy they
were), and ``--repeat`` measures several times.

Check ``df -h`` first: the 1M-rollout pair of files is ~1.6 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import generate  # noqa: E402

REPEATS = 4

_RUNNER = """
import resource, sys, time
started = time.perf_counter()
from rewardgym.cli.main import main
code = main(["eval", "profile", "--inputs", sys.argv[1], "--rollouts", sys.argv[2]])
wall = time.perf_counter() - started
me = resource.getrusage(resource.RUSAGE_SELF)
children = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
print(f"BENCH {wall} {me.ru_maxrss} {children.ru_maxrss} {code} {cpu}", file=sys.stderr)
"""


def baseline_seconds(paths: list[Path]) -> tuple[float, float]:
    """Wall and CPU seconds of one plain ``orjson.loads`` pass over every line of the files."""
    started = time.perf_counter()
    cpu = time.process_time()
    loads = orjson.loads
    for path in paths:
        with open(path, "rb", buffering=1 << 20) as handle:
            for line in handle:
                loads(line)
    return time.perf_counter() - started, time.process_time() - cpu


def _sample_tree(pid: int, stop: threading.Event, peak: list[int]) -> None:
    """Peak of the summed PSS (shared pages split between sharers) of the profiler and its workers.

    The workers are forked, so plain RSS would count the parent's pages once per worker too.
    """
    try:
        root = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    while not stop.is_set():
        total = 0
        try:
            for proc in [root, *root.children(recursive=True)]:
                try:
                    total += proc.memory_full_info().pss
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
        except psutil.NoSuchProcess:
            break
        peak[0] = max(peak[0], total)
        time.sleep(0.05)


def run_sampled(argv: list[str]) -> tuple[str, str, float, int, str]:
    """Run ``argv`` in a fresh process while sampling the summed PSS of its process tree: (stdout, stderr,
    wall seconds, peak PSS bytes, the last ``BENCH …`` line of stderr); a run without one is an error."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stop = threading.Event()
    peak = [0]
    sampler = threading.Thread(target=_sample_tree, args=(proc.pid, stop, peak), daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    stop.set()
    sampler.join()
    lines = [line for line in err.splitlines() if line.startswith("BENCH ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"run failed ({proc.returncode}):\n{out}\n{err}")
    return out, err, wall, peak[0], lines[-1]


def profile_run(inputs: Path, rollouts: Path) -> dict[str, float]:
    """Run the CLI in a fresh interpreter; wall time and RSS figures."""
    out, err, outer, peak, line = run_sampled([sys.executable, "-c", _RUNNER, str(inputs), str(rollouts)])
    _, wall, own, kids, code, cpu = line.split()
    if int(code) != 0:
        raise SystemExit(f"profile exited {code}:\n{out}\n{err}")
    return {
        "process_wall_s": outer,
        "profile_wall_s": float(wall),
        "cpu_s": float(cpu),
        "rss_profiler_mib": int(own) / 1024,
        "rss_largest_worker_mib": int(kids) / 1024,
        "pss_tree_peak_mib": peak / (1 << 20),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="4000,40000,400000,1000000", help="rollout counts, comma-separated"
    )
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/profile-bench"))
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument(
        "--repeat", type=int, default=1, help="measure each size this many times (baseline, then profile)"
    )
    parser.add_argument(
        "--idle-wait",
        type=float,
        default=0.0,
        help="before each measurement, wait up to this many seconds for an idle machine (the profiler's "
        "two cores are shared: another process's load shows up directly in the wall time)",
    )
    args = parser.parse_args()
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        tasks = size // REPEATS
        folder = args.workdir / f"n{size}"
        inputs, rollouts = folder / "bench_materialized_inputs.jsonl", folder / "bench.jsonl"
        if not (inputs.exists() and rollouts.exists()):
            generate(folder, tasks, REPEATS, seed=size)
        megabytes = (inputs.stat().st_size + rollouts.stat().st_size) / 1e6
        for _ in range(args.repeat):
            results.append(_measure(inputs, rollouts, tasks, megabytes, args.idle_wait))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


def wait_for_idle(limit: float) -> float:
    """Wait until the machine's CPUs were less than 2 % busy over 5 s (at most ``limit`` seconds); return
    that busy fraction."""
    deadline = time.monotonic() + limit
    while True:
        busy = psutil.cpu_percent(interval=5.0) / 100
        if busy < 0.02 or time.monotonic() >= deadline:
            return busy


def _measure(
    inputs: Path, rollouts: Path, tasks: int, megabytes: float, idle_wait: float
) -> dict[str, float]:
    """One baseline pass and one profile run, printed and returned."""
    busy = wait_for_idle(idle_wait) if idle_wait > 0 else float("nan")
    base, base_cpu = baseline_seconds([inputs, rollouts])
    load = os.getloadavg()[0]
    run = profile_run(inputs, rollouts)
    row = {
        "rollouts": tasks * REPEATS,
        "tasks": tasks,
        "jsonl_mb": round(megabytes, 1),
        "orjson_baseline_s": round(base, 3),
        "orjson_baseline_cpu_s": round(base_cpu, 3),
        "load_average_before": round(load, 2),
        "busy_before": round(busy, 3),
        **{k: round(v, 3) for k, v in run.items()},
    }
    row["rollouts_per_s"] = round(row["rollouts"] / run["process_wall_s"])
    row["ratio_to_baseline"] = round(run["process_wall_s"] / base, 3)
    row["cpu_ratio_to_baseline"] = round(run["cpu_s"] / base_cpu, 3)
    print(
        f"{row['rollouts']:>9} rollouts  {megabytes:8.1f} MB  wall {run['process_wall_s']:6.2f} s "
        f"(in-process {run['profile_wall_s']:.2f} s)  baseline {base:6.2f} s  "
        f"ratio {row['ratio_to_baseline']:.2f}  "
        f"{row['rollouts_per_s']:>9} rollouts/s  CPU {run['cpu_s']:.2f} s (baseline {base_cpu:.2f} s)  "
        f"RSS profiler {run['rss_profiler_mib']:.0f} MiB, "
        f"worker {run['rss_largest_worker_mib']:.0f} MiB, "
        f"all processes (PSS) {run['pss_tree_peak_mib']:.0f} MiB  "
        f"(load {load:.1f}, CPUs busy before {busy:.0%})",
        flush=True,
    )
    return row


if __name__ == "__main__":
    main()
