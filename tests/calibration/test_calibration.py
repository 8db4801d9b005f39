"""A fast, seeded subset of the calibration suite (``benchmarks/statistics/calibrate.py`` runs it all).

Each check compares a number the product prints with the truth of simulated runs, on pools that are not
of the model's own form, and the tolerance is the target plus the Monte-Carlo error of this subset. A
deliberately wrong prior (the earlier Jeffreys-only forecast) must fail the same check.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.calibration.suite import (
    GROUPS,
    SeedResult,
    forecast_shares,
    jeffreys_only_forecast,
    length_false_positives,
    pools,
    run_seed,
    true_share,
)

POOL_NAMES = ("many-pure", "hard", "bimodal", "never-rich")
SEEDS = 12
TASKS = 150


@pytest.fixture(scope="module")
def results() -> dict[str, list[SeedResult]]:
    return {
        pool.name: [run_seed(pool, TASKS, seed, replicates=1000) for seed in range(SEEDS)]
        for pool in pools(POOL_NAMES)
    }


def _forecast_errors(
    name: str, repeats: int, tasks: int, seeds: int, *, wrong: bool = False
) -> dict[int, float]:
    (pool,) = pools((name,))
    errors: dict[int, list[float]] = {g: [] for g in GROUPS}
    for seed in range(seeds):
        rng = np.random.default_rng(1000 + seed)
        p = pool.draw(rng, tasks)
        n = np.full(tasks, repeats, np.int64)
        s = rng.binomial(n, p).astype(np.int64)
        shares = jeffreys_only_forecast(n, s) if wrong else forecast_shares(n, s)
        for g in GROUPS:
            errors[g].append(shares[g] - true_share(p, g))
    return {g: float(np.mean(v)) for g, v in errors.items()}


@pytest.mark.parametrize("name", ["no-pure", "many-pure", "hard", "bimodal", "never-rich"])
def test_grpo_forecast_is_within_two_points(name: str) -> None:
    errors = _forecast_errors(name, 8, 600, 4)
    assert all(abs(e) <= 0.02 for e in errors.values()), errors


def test_a_deliberately_wrong_prior_fails_the_forecast_check() -> None:
    # the Jeffreys-only model (no mass at 0 or 1) was 5–14 points off on pools with pure tasks
    errors = _forecast_errors("many-pure", 8, 600, 4, wrong=True)
    assert max(abs(e) for e in errors.values()) > 0.05, errors


def test_a_run_where_every_reward_is_zero_forecasts_no_signal() -> None:
    n = np.full(24, 8, np.int64)
    shares = forecast_shares(n, np.zeros(24, np.int64))
    assert shares[8] < 0.02  # the old forecast printed 37 %


def test_adaptive_estimates_are_unbiased_where_s_over_n_is_not(results: dict[str, list[SeedResult]]) -> None:
    for name, runs in results.items():
        sums = np.sum([r.bias_sum for r in runs], axis=0)
        counts = np.sum([r.bias_count for r in runs], axis=0)
        for bucket in range(counts.shape[0]):
            if counts[bucket] < 100:
                continue
            # the estimate's per-task sd is at most 0.5: four standard errors plus the 1-point target
            limit = 0.01 + 4 * 0.5 / math.sqrt(counts[bucket])
            assert abs(sums[0, bucket] / counts[bucket]) <= limit, (name, bucket)
        low = sums[1, 0] / counts[0]
        assert low > 0.04, name  # s / n of the lowest bucket: pulled up toward 1/2


def test_compare_of_adaptive_and_fixed_runs_of_one_policy_calls_no_change(
    results: dict[str, list[SeedResult]],
) -> None:
    runs = [r for rs in results.values() for r in rs]
    false_adaptive = np.mean([r.false_verdict_adaptive for r in runs])
    false_fixed = np.mean([r.false_verdict_fixed for r in runs])
    limit = 0.05 + 3 * math.sqrt(0.05 * 0.95 / len(runs))
    assert false_adaptive <= limit and false_fixed <= limit, (false_adaptive, false_fixed)


def test_adaptive_calls_stay_within_a_point_of_fixed_repeats_in_every_seed(
    results: dict[str, list[SeedResult]],
) -> None:
    gaps = [r.call_gap for rs in results.values() for r in rs]
    assert max(gaps) <= 0.01, max(gaps)
    assert min(r.saved for rs in results.values() for r in rs) > 0.05  # and it does save rollouts


def test_pass_at_k_of_unequal_repeats_is_monotone_and_near_the_truth(
    results: dict[str, list[SeedResult]],
) -> None:
    for name, runs in results.items():
        assert all(r.pass_at_k_monotone for r in runs), name
        for k in runs[0].pass_at_k_error:
            mean = float(np.mean([r.pass_at_k_error[k] for r in runs]))
            # per task 1 − (1 − p)^k has sd ≤ 0.5: three standard errors of the mean over the seeds
            assert abs(mean) <= 0.01 + 3 * 0.5 / math.sqrt(TASKS * len(runs)), (name, k, mean)


def test_per_task_intervals_cover_their_tasks(results: dict[str, list[SeedResult]]) -> None:
    for name, runs in results.items():
        for design in runs[0].designs:
            coverage = float(np.mean([r.designs[design].jeffreys_covered for r in runs]))
            assert 0.93 <= coverage <= 0.995, (name, design, coverage)


def test_settled_tasks_are_in_their_band(results: dict[str, list[SeedResult]]) -> None:
    settled = sum(r.designs[d].settled for rs in results.values() for r in rs for d in r.designs)
    wrong = sum(r.designs[d].settled_wrong for rs in results.values() for r in rs for d in r.designs)
    assert settled > 100
    assert wrong / settled <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / settled), wrong / settled


def test_the_length_test_respects_task_clustering() -> None:
    seeds = 300
    rate = length_false_positives(seeds, tasks=120, start=50_000)
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / seeds), rate
