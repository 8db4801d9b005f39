"""The calibration suite, in full: every number rewardgym prints against simulated runs with a known truth.

For every pool of :data:`rewardgym.stats.simulate.POOLS` (no pure tasks, balanced, many pure, hard, rare,
bimodal, never-rich — most of them not of the model's own form) and ``--seeds`` seeded draws of
``--tasks`` tasks, it runs fixed 4 / 8 / 16 repeats and an adaptive run (cap 16) on the same outcomes and
checks each number with :mod:`tests.calibration.suite`. It prints markdown tables — the ones in
docs/analysis.md § "How we know these numbers are right" — with each target and whether it holds.

Usage::

    .venv/bin/python benchmarks/statistics/calibrate.py [--tasks 300] [--seeds 100] [--length-seeds 1000]
        [--workers 2] [--pools balanced,hard]

Targets (issue 21): GRPO forecast |error| ≤ 2 pp at G ∈ {4, 8, 16} (G ≤ 2 × repeats; beyond that the
printed range must hold the truth); 95 % intervals cover 93–97 %; compare false verdicts ≤ 5 % + 2
binomial SE; adaptive per-task estimates |bias| ≤ 1 pp per p bucket; clustered length test ≤ 6 % false
positives at 5 %; pass@k monotone and within Monte-Carlo error; adaptive calls ≤ 1 point worse than fixed
repeats at the cap in every seed.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.calibration.suite import (  # noqa: E402
    BUCKETS,
    DESIGNS,
    GROUPS,
    PASS_K,
    SeedResult,
    length_false_positives,
    pools,
    run_seed,
)


def _job(args: tuple[str, int, int]) -> tuple[str, SeedResult]:
    name, tasks, seed = args
    (pool,) = pools((name,))
    return name, run_seed(pool, tasks, seed, old_forecast=True)


def _ok(flag: bool) -> str:
    return "yes" if flag else "**no**"


def _pp(value: float) -> str:
    return f"{100 * value:+.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--length-seeds", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pools", default="")
    args = parser.parse_args()
    names = tuple(n for n in args.pools.split(",") if n) or tuple(p.name for p in pools())
    started = time.perf_counter()
    jobs = [(name, args.tasks, seed) for name in names for seed in range(args.seeds)]
    results: dict[str, list[SeedResult]] = {name: [] for name in names}
    with ProcessPoolExecutor(args.workers) as executor:
        for name, result in executor.map(_job, jobs, chunksize=4):
            results[name].append(result)
    seeds = args.seeds
    print(f"# Calibration suite: {len(names)} pools × {seeds} seeds × {args.tasks} tasks\n")

    print("## GRPO informative-share forecast: mean error (pp) over seeds, target |error| ≤ 2\n")
    print("| pool | design | G=4 | G=8 | G=16 | old model (Jeffreys per task), fixed 8, G=4 / 8 / 16 |")
    print("|---|---|---|---|---|---|")
    worst_inside = 0.0
    for name in names:
        for design in DESIGNS:
            repeats = 16 if design == "adaptive-16" else int(design.split("-")[1])
            cells = []
            for g in GROUPS:
                error = float(np.mean([r.designs[design].forecast_error[g] for r in results[name]]))
                inside = g <= 2 * repeats
                if inside:
                    worst_inside = max(worst_inside, abs(error))
                cells.append(_pp(error) + ("" if inside else " (extrapolation)"))
            old = ""
            if design == "fixed-8":
                old = " / ".join(
                    _pp(float(np.mean([r.old_forecast_error[g] for r in results[name]]))) for g in GROUPS
                )
            print(f"| {name} | {design} | {' | '.join(cells)} | {old} |")
    covered = [
        r.extrapolation_covered for rs in results.values() for r in rs if r.extrapolation_covered is not None
    ]
    print(
        f"\nWorst |mean error| where G ≤ 2 × repeats: {100 * worst_inside:.1f} pp (target ≤ 2: "
        f"{_ok(worst_inside <= 0.02)}). Fixed 4 at G = 16 (extrapolation): the printed range holds the "
        f"truth (± 1 pp) in {100 * np.mean(covered):.0f} % of runs.\n"
    )

    print("## Intervals and settled: coverage (target 93–97 %), wrongly settled tasks (target ≤ 5 %)\n")
    print(
        "| pool | design | Jeffreys per task (tasks with 0 < p < 1) | mean pass rate (summary) "
        "| settled tasks | outside their band |"
    )
    print("|---|---|---|---|---|---|")
    for name in names:
        for design in DESIGNS:
            rs = [r.designs[design] for r in results[name]]
            jeff = float(np.mean([d.jeffreys_covered for d in rs]))
            inner = float(np.nanmean([d.jeffreys_inner_covered for d in rs]))
            mean_cov = float(np.mean([d.mean_covered for d in rs]))
            settled = sum(d.settled for d in rs)
            wrong = sum(d.settled_wrong for d in rs)
            share = wrong / settled if settled else 0.0
            print(f"| {name} | {design} | {100 * jeff:.1f} % ({100 * inner:.1f} %) | {100 * mean_cov:.1f} % "
                  f"| {settled} | {100 * share:.1f} % |")  # fmt: skip

    print("\n## Compare of two runs of the same policy: false verdicts (target ≤ 5 % + 2 SE)\n")
    print("| pool | fixed 8 vs fixed 8 | adaptive vs fixed 16 | limit |")
    print("|---|---|---|---|")
    limit = 0.05 + 2 * math.sqrt(0.05 * 0.95 / seeds)
    for name in names:
        fixed = float(np.mean([r.false_verdict_fixed for r in results[name]]))
        adaptive = float(np.mean([r.false_verdict_adaptive for r in results[name]]))
        print(f"| {name} | {100 * fixed:.1f} % | {100 * adaptive:.1f} % | {100 * limit:.1f} % "
              f"({_ok(max(fixed, adaptive) <= limit)}) |")  # fmt: skip

    print(
        "\n## Adaptive runs: per-task estimate bias by true p (pp; unbiased estimate ± its SE / s over n)\n"
    )
    print(
        "| pool | "
        + " | ".join(f"p in ({lo:g}, {hi:g})" for lo, hi in BUCKETS)
        + " | saved | call gap, mean / worst seed |"
    )
    print("|---|" + "---|" * (len(BUCKETS) + 2))
    for name in names:
        sums = np.sum([r.bias_sum for r in results[name]], axis=0)
        counts = np.sum([r.bias_count for r in results[name]], axis=0)
        cells = []
        for b in range(len(BUCKETS)):
            if counts[b] < 50:
                cells.append("–")
                continue
            mean = sums[0, b] / counts[b]
            se = math.sqrt(max(sums[2, b] / counts[b] - mean**2, 0.0) / counts[b])
            cells.append(f"{_pp(mean)} ± {100 * se:.1f} / {_pp(sums[1, b] / counts[b])}")
        gaps = [r.call_gap for r in results[name]]
        saved = float(np.mean([r.saved for r in results[name]]))
        print(f"| {name} | {' | '.join(cells)} | {100 * saved:.0f} % | {_pp(float(np.mean(gaps)))} / "
              f"{_pp(max(gaps))} |")  # fmt: skip

    print("\n## pass@k of adaptive runs (unequal repeats): mean error (pp), monotone in k\n")
    print("| pool | " + " | ".join(f"pass@{k}" for k in PASS_K) + " | monotone |")
    print("|---|" + "---|" * (len(PASS_K) + 1))
    for name in names:
        errors = [_pp(float(np.mean([r.pass_at_k_error[k] for r in results[name]]))) for k in PASS_K]
        monotone = all(r.pass_at_k_monotone for r in results[name])
        print(f"| {name} | {' | '.join(errors)} | {_ok(monotone)} |")

    rate = length_false_positives(args.length_seeds)
    print(
        f"\n## Length: within-task permutation test at 5 %, no length effect\n\nFalse positives: "
        f"{100 * rate:.1f} % of {args.length_seeds} runs (target ≤ 6 %: {_ok(rate <= 0.06)}).\n"
    )
    print(f"_{time.perf_counter() - started:.0f} s; `{' '.join(sys.argv)}`_")


if __name__ == "__main__":
    main()
