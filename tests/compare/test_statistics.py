"""The statistics of ``gym eval compare``: each function against a plain-Python computation, and the whole
decision against synthetic policies of known per-task pass probability (seeded simulations): under no
change the false "improved" / "regressed" rate stays within the nominal level, and a real change is found
about as often as the stated power says."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from rewardgym.compare import stats
from tests.compare.helpers import simulate

LEVEL = 0.95


def _fisher_oracle(sa: int, na: int, sb: int, nb: int) -> float:
    """Two-sided Fisher exact p-value: the probability of tables no more likely than the observed one."""
    total, passes = na + nb, sa + sb
    denominator = math.comb(total, passes)

    def prob(x: int) -> float:  # x passes in B
        return math.comb(nb, x) * math.comb(na, passes - x) / denominator

    observed = prob(sb)
    low, high = max(0, passes - na), min(nb, passes)
    return min(1.0, sum(prob(x) for x in range(low, high + 1) if prob(x) <= observed * (1 + 1e-7)))


def _bh_oracle(p: list[float]) -> list[float]:
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    q = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p[i] * m / rank)
        q[i] = running
    return q


def test_fisher_matches_the_hypergeometric_sum() -> None:
    rng = np.random.default_rng(3)
    na = rng.integers(1, 17, 300)
    nb = rng.integers(1, 17, 300)
    sa = rng.integers(0, na + 1)
    sb = rng.integers(0, nb + 1)
    got = stats.fisher_p(na, sa, nb, sb)
    want = [_fisher_oracle(*v) for v in zip(sa.tolist(), na.tolist(), sb.tolist(), nb.tolist(), strict=True)]
    assert np.allclose(got, want, rtol=1e-9, atol=1e-12)
    from scipy.stats import fisher_exact  # and scipy's, on larger tables too

    big = rng.integers(1, 200, (40, 2))
    wins = rng.integers(0, big + 1)
    for (na, nb), (sa, sb) in zip(big.tolist(), wins.tolist(), strict=True):
        reference = fisher_exact([[sb, nb - sb], [sa, na - sa]]).pvalue
        assert stats.fisher_p(*(np.array([v]) for v in (na, sa, nb, sb)))[0] == pytest.approx(
            reference, rel=1e-9
        )
    assert stats.fisher_p(np.array([8]), np.array([0]), np.array([8]), np.array([8]))[0] == pytest.approx(
        2 / math.comb(16, 8)
    )


def test_benjamini_hochberg_matches_the_step_up_rule() -> None:
    rng = np.random.default_rng(4)
    p = np.concatenate([rng.random(200), rng.random(50) * 1e-3, [0.5, 0.5, 1.0]])
    assert np.allclose(stats.bh_qvalues(p), _bh_oracle(p.tolist()), rtol=1e-12)
    # By hand: p(k) * 10 / k is 0.01, 0.04, 0.13, 0.1025, 0.084, 0.1, …: the step-up rule rejects
    # 2 at 0.05 and 5 at 0.09.
    example = np.array([0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216])
    assert int((stats.bh_qvalues(example) <= 0.05).sum()) == 2
    assert int((stats.bh_qvalues(example) <= 0.09).sum()) == 5


def test_posterior_probability_matches_monte_carlo() -> None:
    draws = random.Random(5)
    cases = [(8, 0, 8, 0), (8, 2, 8, 5), (4, 4, 4, 3), (16, 7, 8, 4), (1, 0, 32, 31), (8, 8, 8, 8)]
    n_a, s_a, n_b, s_b = (np.array(col, np.int64) for col in zip(*cases, strict=True))
    got = stats.prob_b_better(n_a, s_a, n_b, s_b)
    for (na, sa, nb, sb), value in zip(cases, got.tolist(), strict=True):
        trials = 100_000
        wins = sum(
            draws.betavariate(sb + 0.5, nb - sb + 0.5) > draws.betavariate(sa + 0.5, na - sa + 0.5)
            for _ in range(trials)
        )
        assert value == pytest.approx(wins / trials, abs=0.005), (na, sa, nb, sb)
    assert got[0] == pytest.approx(0.5, abs=1e-3)  # the same evidence: a coin flip


def _bootstrap_oracle(d: list[float], replicates: int, seed: int) -> tuple[float, float]:
    draws = random.Random(seed)
    means = sorted(sum(draws.choices(d, k=len(d))) / len(d) for _ in range(replicates))
    return means[int(0.025 * replicates)], means[int(0.975 * replicates) - 1]


@pytest.mark.parametrize("distinct", ["few", "many"])
def test_paired_bootstrap_matches_resampling_tasks(distinct: str) -> None:
    rng = np.random.default_rng(6)
    if distinct == "few":  # 8 repeats: differences in steps of 1/8, the multinomial path
        d = (rng.integers(0, 9, 400) - rng.integers(0, 9, 400)) / 8
    else:  # continuous differences: the index path
        d = rng.normal(0.03, 0.3, 5000)
    boot = stats.paired_bootstrap(d, 4000, seed=1, level=LEVEL)
    assert (boot.distinct <= stats.DISTINCT_MAX) == (distinct == "few")
    low, high = _bootstrap_oracle(d.tolist(), 4000, seed=2)
    se = d.std(ddof=1) / math.sqrt(d.shape[0])
    assert boot.diff == pytest.approx(float(d.mean()), abs=1e-12)
    assert boot.se == pytest.approx(se, rel=0.06)
    assert boot.low == pytest.approx(low, abs=0.12 * se)
    assert boot.high == pytest.approx(high, abs=0.12 * se)
    again = stats.paired_bootstrap(d, 4000, seed=1, level=LEVEL)
    assert (again.low, again.high) == (boot.low, boot.high)  # seeded


def test_transitions_and_band_matrix() -> None:
    s_a = np.array([0, 3, 8, 5, 4, 2])
    s_b = np.array([6, 8, 0, 1, 4, 6])
    rate_a, rate_b = s_a / 8, s_b / 8
    significant = np.array([True, True, True, True, False, False])
    code = stats.transitions(s_a, rate_a, s_b, rate_b, significant)
    names = [stats.TRANSITIONS[c] for c in code]
    assert names == ["newly_solved", "improved", "newly_failed", "regressed", "unchanged", "unchanged"]
    matrix = stats.band_matrix(np.array([0, 0, 6, 3]), np.array([0, 3, 6, 3]))
    assert matrix[0][0] == 1 and matrix[0][3] == 1 and matrix[6][6] == 1 and matrix[3][3] == 1
    assert sum(map(sum, matrix)) == 4


def test_minimum_detectable_difference_has_the_stated_power() -> None:
    se = 0.01
    mdd = stats.minimum_detectable(se, LEVEL, 0.8, tasks=10**6)
    assert mdd == pytest.approx((1.959964 + 0.841621) * se, rel=1e-5)  # many tasks: the normal test
    assert stats.power_at(mdd, se, LEVEL, tasks=10**6) == pytest.approx(0.8, abs=1e-3)
    assert stats.power_at(0.0, se, LEVEL, tasks=10**6) == pytest.approx(0.05, abs=1e-6)
    # 10 tasks: sqrt(10 / 9) * t(0.975, 9) = 1.0540926 * 2.262157 (the t table)
    assert stats.critical(LEVEL, 10) == pytest.approx(2.384523, rel=1e-5)
    assert stats.minimum_detectable(se, LEVEL, 0.8, tasks=10) == pytest.approx((2.384523 + 0.841621) * se)


@pytest.mark.parametrize("tasks", [10, 20])
def test_few_tasks_keep_the_nominal_level(tasks: int) -> None:
    """The expanded interval: with 10 or 20 tasks the plain percentile interval calls 7–10 % of
    no-change comparisons a change; this one stays at the level (400 comparisons each)."""
    rng = np.random.default_rng(12 + tasks)
    p = rng.beta(0.5, 0.5, tasks)
    trials = 400
    false = sum(
        _decide(simulate(p, 8, rng), simulate(p, 8, rng), seed=k, per_task=False)[0] != "no detectable change"
        for k in range(trials)
    )
    print(f"{tasks} tasks: {false}/{trials} false verdicts")
    assert false / trials <= 0.05 + _tolerance(0.05, trials)


def _decide(a: np.ndarray, b: np.ndarray, seed: int, *, per_task: bool = True) -> tuple[str, int, float]:
    n = np.full(a.shape[0], a.shape[1], np.int64)
    s_a, s_b = a.sum(axis=1), b.sum(axis=1)
    boot = stats.paired_bootstrap(s_b / n - s_a / n, 2000, seed, LEVEL)
    significant = 0
    if per_task:
        significant = int((stats.bh_qvalues(stats.fisher_p(n, s_a, n, s_b)) <= 0.05).sum())
    return stats.verdict(boot), significant, stats.minimum_detectable(boot.se, LEVEL, 0.8, a.shape[0])


def _tolerance(rate: float, trials: int) -> float:
    return 3 * math.sqrt(rate * (1 - rate) / trials)


def test_no_change_is_rarely_called_a_change() -> None:
    """200 comparisons of one policy with itself (200 tasks × 8 repeats, p from a U-shaped spread)."""
    rng = np.random.default_rng(7)
    p = rng.beta(0.5, 0.5, 200)
    trials = 200
    false_verdicts = 0
    false_tasks = 0
    for k in range(trials):
        verdict, significant, _ = _decide(simulate(p, 8, rng), simulate(p, 8, rng), seed=k)
        false_verdicts += verdict != "no detectable change"
        false_tasks += significant > 0
    nominal = 1 - LEVEL
    print(f"false verdicts {false_verdicts}/{trials}, comparisons with a false per-task change {false_tasks}")
    assert false_verdicts / trials <= nominal + _tolerance(nominal, trials)
    assert false_tasks / trials <= 0.05 + _tolerance(0.05, trials)  # BH keeps the FDR = FWER under the null


def test_a_real_change_is_detected_with_the_stated_power() -> None:
    """B solves each task 3 points more often: with 400 tasks × 8 repeats the minimum detectable difference
    is below that, so the change is found in at least 80 % of 200 comparisons — as often as the stated
    power predicts."""
    rng = np.random.default_rng(8)
    p = rng.beta(0.5, 0.5, 400) * 0.9
    trials = 200
    detected = 0
    mdds = []
    for k in range(trials):
        verdict, _, mdd = _decide(simulate(p, 8, rng), simulate(p + 0.03, 8, rng), seed=k, per_task=False)
        detected += verdict == "improved"
        mdds.append(mdd)
    power = detected / trials
    mdd = float(np.mean(mdds))
    se = mdd / (stats.critical(LEVEL, 400) + 0.841621)
    predicted = stats.power_at(0.03, se, LEVEL, 400)
    print(
        f"detected {detected}/{trials} (power {power:.2f}, predicted {predicted:.2f}) at a true +3 pp; "
        f"mean MDD {100 * mdd:.1f} pp"
    )
    assert mdd < 0.03
    assert power >= 0.8
    assert abs(power - predicted) <= _tolerance(predicted, trials) + 0.02
