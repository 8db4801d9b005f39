"""The calibration suite: every number rewardgym prints, checked against simulated runs with a known truth.

One *seed* of a pool draws T tasks' pass probabilities from :data:`rewardgym.stats.simulate.POOLS` (most of
them not of the model's own form), then runs them as users do — fixed repeats (4, 8, 16, and a second,
independent 8) and an adaptive run capped at 16 — and evaluates the product's own functions on the result:

- the GRPO forecast (:class:`rewardgym.analysis.grpo.Forecast`) against the tasks' true informative share
  1 − mean(p^G + (1 − p)^G), at G = 4, 8, 16;
- the per-task 95 % Jeffreys interval: share of tasks whose true p it covers;
- the summary's interval of the mean pass rate (:func:`rewardgym.profile.compute.report.rates_summary`
  over the design's per-task estimates) against the pool's mean pass probability (tasks are a sample of
  the pool);
- "settled" (:func:`rewardgym.analysis.uncertainty.numbers_from_counts`): share of settled tasks whose
  true p lies outside the band they were settled in (≤ 1 − confidence when the posterior is calibrated);
- pass@k (:func:`rewardgym.metrics.pass_at_k.pass_majority_metrics`) of the adaptive run (unequal
  repeats) against the true mean of 1 − (1 − p)^k, and whether it grows with k;
- the adaptive run's per-task estimates (:mod:`rewardgym.stats.sequential`) — their bias per true-p
  bucket — and its never / sometimes / always calls against fixed repeats at its cap on the same draws;
- compare's verdict (:mod:`rewardgym.compare.stats`) between two runs of the same policy: fixed 8 vs an
  independent fixed 8, and adaptive vs fixed 16 — every "improved" / "regressed" is false.

:func:`length_false_positives` checks the within-task length test on runs where difficulty and length
vary by task but length has no effect. :func:`jeffreys_only_forecast` is the model the forecast used
before (a Jeffreys posterior per task, no point masses): a deliberately wrong prior the suite must catch.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from rewardgym.analysis.grpo import Forecast
from rewardgym.analysis.length import length_analysis
from rewardgym.analysis.uncertainty import jeffreys, numbers_from_counts
from rewardgym.compare import stats as compare_stats
from rewardgym.metrics.pass_at_k import pass_majority_metrics
from rewardgym.profile.compute.report import rates_summary
from rewardgym.stats.adaptive import AdaptivePolicy
from rewardgym.stats.arrays import FloatArray, IntArray
from rewardgym.stats.posterior import posterior
from rewardgym.stats.prior import Prior
from rewardgym.stats.sequential import rao_blackwell
from rewardgym.stats.simulate import POOLS, Pool, adaptive_run, draw_outcomes, fixed_from

GROUPS = (4, 8, 16)
PASS_K = (1, 4, 16)
BUCKETS = ((0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.0))
"""True-p buckets (open at 0 and at 1: tasks never or always solved have no bias to show)."""
DESIGNS = ("fixed-4", "fixed-8", "fixed-16", "adaptive-16")
_POOL_MEANS: dict[str, float] = {}


def pool_mean(pool: Pool) -> float:
    """E[p] of the pool (by a large seeded draw, once)."""
    if pool.name not in _POOL_MEANS:
        _POOL_MEANS[pool.name] = float(pool.draw(np.random.default_rng(12345), 2_000_000).mean())
    return _POOL_MEANS[pool.name]


@dataclass
class DesignResult:
    """One design on one seed."""

    forecast_error: dict[int, float]
    jeffreys_covered: float
    jeffreys_inner_covered: float
    """Coverage over the tasks with 0 < p < 1 only (a task never or always solved is always covered)."""
    mean_covered: bool
    settled: int
    settled_wrong: int


@dataclass
class SeedResult:
    designs: dict[str, DesignResult]
    pass_at_k_error: dict[int, float]
    pass_at_k_monotone: bool
    bias_sum: FloatArray
    """Per bucket: sum of (estimate − p) of the adaptive run's tasks, and of s / n (rows 0 and 1), and the
    sum of (estimate − p)² (row 2, for the standard error)."""
    bias_count: IntArray
    call_gap: float
    """Accuracy of fixed 16's never / sometimes / always calls minus the adaptive run's (paired)."""
    saved: float
    false_verdict_fixed: bool
    false_verdict_adaptive: bool
    old_forecast_error: dict[int, float] = field(default_factory=dict)
    extrapolation_covered: bool | None = None
    """Fixed 4 at G = 16 (an extrapolation): whether the printed range holds the truth."""


def true_share(p: FloatArray, group: int) -> float:
    return float(1.0 - np.mean(p**group + (1.0 - p) ** group))


def _in_band(p: FloatArray, band: IntArray, epsilon: float = 0.05) -> np.ndarray:
    lo = np.array([0.0, 0.0, 0.2, 0.4, 0.6, 0.8, 1 - epsilon])
    hi = np.array([epsilon, 0.2, 0.4, 0.6, 0.8, 1.0, 1.0])
    safe = np.clip(band, 0, 6)
    inner = (band >= 1) & (band <= 5)
    strict_low = np.where(inner, p > lo[safe], p >= lo[safe])
    strict_high = np.where(band == 5, p < hi[safe], p <= hi[safe])
    return np.asarray(strict_low & strict_high, dtype=np.bool_)


def forecast_shares(n: IntArray, s: IntArray) -> dict[int, float]:
    """The product's forecast of the informative share of binary tasks."""
    forecast = Forecast(n, s, np.ones(n.shape[0], np.bool_), np.zeros(0, np.int64), np.zeros(0))
    return {g: float(forecast.informative_share(g) or 0.0) for g in GROUPS}


def jeffreys_only_forecast(n: IntArray, s: IntArray) -> dict[int, float]:
    """The earlier forecast: Jeffreys Beta(s + ½, n − s + ½) per task, no point masses (the wrong prior)."""
    shares = {}
    for g in GROUPS:
        # a Jeffreys posterior is the mixture prior with no point masses and Beta(½, ½)
        post = posterior(n, s, Prior(0.0, 0.0, 0.5, 0.5))
        shares[g] = float(1.0 - post.all_equal(g).mean())
    return shares


def _design(p: FloatArray, pool: Pool, n: IntArray, s: IntArray, estimate: FloatArray) -> DesignResult:
    shares = forecast_shares(n, s)
    low, high = jeffreys(n, s)
    summary = rates_summary(estimate)
    interval = summary.interval or (np.nan, np.nan)
    truth = pool_mean(pool)
    numbers = numbers_from_counts(np.arange(n.shape[0]), n, s, estimate=estimate)
    settled = numbers.settled
    wrong = settled & ~_in_band(p, numbers.band)
    return DesignResult(
        forecast_error={g: shares[g] - true_share(p, g) for g in GROUPS},
        jeffreys_covered=float(np.mean((low <= p) & (p <= high))),
        jeffreys_inner_covered=float(np.mean(((low <= p) & (p <= high))[(p > 0) & (p < 1)])),
        mean_covered=bool(interval[0] <= truth <= interval[1]),
        settled=int(settled.sum()),
        settled_wrong=int(wrong.sum()),
    )


def _calls(n: IntArray, s: IntArray) -> IntArray:
    return np.asarray(np.where(s == 0, 0, np.where(s == n, 2, 1)), dtype=np.int64)


def _verdict_is_false(a: FloatArray, b: FloatArray, seed: int, replicates: int) -> bool:
    keep = ~np.isnan(a) & ~np.isnan(b)
    boot = compare_stats.paired_bootstrap(b[keep] - a[keep], replicates, seed, 0.95)
    return compare_stats.verdict(boot) != "no detectable change"


def run_seed(
    pool: Pool, tasks: int, seed: int, *, replicates: int = 2000, old_forecast: bool = False
) -> SeedResult:
    """Every check on one seeded draw of ``pool`` (see module doc)."""
    rng = np.random.default_rng(seed)
    p = pool.draw(rng, tasks)
    outcomes = draw_outcomes(p, 16, rng)
    designs: dict[str, DesignResult] = {}
    fixed_counts: dict[int, tuple[IntArray, IntArray]] = {}
    for repeats in (4, 8, 16):
        run = fixed_from(outcomes, repeats)
        n, s = run.n, run.s
        fixed_counts[repeats] = (n, s)
        designs[f"fixed-{repeats}"] = _design(p, pool, n, s, s / n)
    policy = AdaptivePolicy()
    adaptive = adaptive_run(p, policy, rng, outcomes)
    n_a, s_a = adaptive.blocks.n, adaptive.blocks.s
    estimate = rao_blackwell(adaptive.blocks, policy, adaptive.fits)
    designs["adaptive-16"] = _design(p, pool, n_a, s_a, estimate)
    # pass@k of the adaptive run (unequal repeats) through the metrics the collector prints
    rows = [[{"reward": float(x)} for x in outcomes[t, : n_a[t]]] for t in range(tasks)]
    metrics, _ = pass_majority_metrics(rows)
    top = int(n_a.max())
    curve = [metrics[f"pass@{k}/accuracy"] for k in range(1, top + 1)]
    pass_error = {k: metrics[f"pass@{k}/accuracy"] / 100 - float(np.mean(1 - (1 - p) ** k)) for k in PASS_K}
    # bias of the adaptive run's per-task estimates, per true-p bucket
    sums = np.zeros((3, len(BUCKETS)))
    counts = np.zeros(len(BUCKETS), np.int64)
    for b, (lo, hi) in enumerate(BUCKETS):
        inside = (p > lo) & (p < hi)
        sums[0, b] = float(np.sum(estimate[inside] - p[inside]))
        sums[1, b] = float(np.sum(s_a[inside] / n_a[inside] - p[inside]))
        sums[2, b] = float(np.sum((estimate[inside] - p[inside]) ** 2))
        counts[b] = int(inside.sum())
    truth_call = np.where(p == 0, 0, np.where(p == 1, 2, 1))
    n16, s16 = fixed_counts[16]
    gap = float(np.mean(_calls(n16, s16) == truth_call) - np.mean(_calls(n_a, s_a) == truth_call))
    # two runs of the same policy: a fixed 8 against an independent fixed 8, adaptive against fixed 16
    second = draw_outcomes(p, 8, rng)
    other = fixed_from(second, 8)
    n8, s8 = fixed_counts[8]
    result = SeedResult(
        designs=designs,
        pass_at_k_error=pass_error,
        pass_at_k_monotone=all(b >= a - 1e-9 for a, b in itertools.pairwise(curve)),
        bias_sum=sums,
        bias_count=counts,
        call_gap=gap,
        saved=1.0 - float(n_a.sum()) / (16 * tasks),
        false_verdict_fixed=_verdict_is_false(s8 / n8, other.s / other.n, seed, replicates),
        false_verdict_adaptive=_verdict_is_false(s16 / n16, estimate, seed + 1, replicates),
    )
    if old_forecast:
        old = jeffreys_only_forecast(n8, s8)
        result.old_forecast_error = {g: old[g] - true_share(p, g) for g in GROUPS}
        n4, s4 = fixed_counts[4]
        span = Forecast(n4, s4, np.ones(tasks, np.bool_), np.zeros(0, np.int64), np.zeros(0)).share_range(16)
        result.extrapolation_covered = (
            span is not None and span[0] - 0.01 <= true_share(p, 16) <= span[1] + 0.01
        )
    return result


def length_false_positives(seeds: int, tasks: int = 200, repeats: int = 8, start: int = 0) -> float:
    """Share of runs whose within-task length test says p < 0.05 although length has no effect: harder
    tasks are longer and fail more, so only the task, not length, drives reward."""
    hits = 0
    for seed in range(start, start + seeds):
        rng = np.random.default_rng(seed)
        p = rng.beta(0.6, 0.6, tasks)
        typical = rng.lognormal(5.0, 0.5, tasks) * (1.0 + 2.0 * (1.0 - p))
        task = np.repeat(np.arange(tasks), repeats)
        reward = (rng.random(tasks * repeats) < p[task]).astype(np.float64)
        tokens = np.round(typical[task] * rng.lognormal(0.0, 0.3, tasks * repeats))
        flags = np.ones(tasks * repeats, np.bool_)
        found = length_analysis(task, flags, reward, reward >= 1, tokens, ~flags)
        value = found["spearman"]["within_task_p"]
        hits += value is not None and value < 0.05
    return hits / seeds


def pools(names: tuple[str, ...] | None = None) -> list[Pool]:
    return [POOLS[name] for name in (names or tuple(POOLS))]
