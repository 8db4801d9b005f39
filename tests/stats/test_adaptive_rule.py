"""The decision rule of ``--adaptive`` (rewardgym.stats.adaptive): settled / unsettled, allocation, caps,
budget, the empirical-Bayes prior and the band-boundary decision."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import betainc

from rewardgym.stats.adaptive import (
    LEGACY_RULE,
    AdaptivePolicy,
    Prior,
    allocate,
    classify,
    fit_prior,
    p_failable_given_all_pass,
    p_solvable_given_all_fail,
    pass_by_cap_given_all_fail,
    unsettled,
)
from rewardgym.stats.prior import PriorFit


def _a(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_a_task_with_a_pass_and_a_fail_is_settled_whatever_the_prior() -> None:
    policy = AdaptivePolicy()
    for prior in (Prior(0.0, 0.0, 0.1, 0.1), Prior(0.9, 0.05, 5.0, 5.0)):
        assert not unsettled(_a(2), _a(1), policy, prior).any()
        assert not unsettled(_a(16), _a(15), policy, prior).any()


def test_all_fail_posterior_matches_its_closed_form() -> None:
    # Uniform middle: P(p > 0 | 0 of n) = πm/(n+1) / (π0 + πm/(n+1)).
    prior = Prior(0.3, 0.2, 1.0, 1.0)
    n = _a(1, 4, 10, 40)
    expected = (0.5 / (n + 1)) / (0.3 + 0.5 / (n + 1))
    assert np.allclose(p_solvable_given_all_fail(n, prior), expected)
    # all-pass mirrors all-fail with the two point masses swapped
    assert np.allclose(p_failable_given_all_pass(n, Prior(0.2, 0.3, 1.0, 1.0)), expected)


def test_legacy_rule_settles_exactly_where_the_posterior_crosses_the_confidence() -> None:
    prior = Prior(0.3, 0.2, 1.0, 1.0)
    policy = AdaptivePolicy(confidence=0.95, rule=LEGACY_RULE)
    # 0.5/(n+1) / (0.3 + 0.5/(n+1)) <= 0.05  <=>  n + 1 >= 0.5 * 0.95 / (0.05 * 0.3) = 31.67
    n = np.arange(1, 40, dtype=np.int64)
    open_ = unsettled(n, np.zeros_like(n), policy, prior)
    assert open_[n < 31].all() and not open_[n >= 31].any()
    # the same counts as all-pass: the prior has less mass at 1, so they stay open longer
    assert unsettled(_a(31), _a(31), policy, prior).all()


def test_regret_rule_settles_where_the_cap_would_change_the_call_rarely_enough() -> None:
    # Uniform middle: P(p > 0, a pass in n+1..cap | 0 of n) = πm (1/(n+1) − 1/(cap+1)) / (π0 + πm/(n+1)).
    prior = Prior(0.3, 0.2, 1.0, 1.0)
    cap = 40
    n = np.arange(1, 41, dtype=np.int64)
    expected = 0.5 * (1 / (n + 1) - 1 / (cap + 1)) / (0.3 + 0.5 / (n + 1))
    assert np.allclose(pass_by_cap_given_all_fail(n, cap, prior), expected)
    policy = AdaptivePolicy(max_per_task=cap, confidence=0.95)
    open_ = unsettled(n, np.zeros_like(n), policy, prior)
    assert open_.tolist() == (expected > 0.05).tolist()
    assert open_[0] and not open_[-1]  # at the cap nothing is left to change the call


def test_regret_rule_takes_the_least_favourable_plausible_prior() -> None:
    # Two priors the data cannot tell apart: one says 0 of 6 is surely never solved, the other that such
    # tasks are often merely hard. The rule must not stop on the word of the first.
    sure = Prior(0.6, 0.1, 5.0, 1.0)
    doubtful = Prior(0.3, 0.1, 0.3, 2.0)
    rows = np.array([[p.never, p.always, p.a, p.b] for p in (sure, doubtful)])
    policy = AdaptivePolicy(confidence=0.95)
    n = np.array([6], np.int64)
    assert not unsettled(n, np.zeros_like(n), policy, sure).any()
    assert unsettled(n, np.zeros_like(n), policy, PriorFit(sure, rows)).all()


def test_recorded_policies_without_a_rule_replay_the_legacy_rule() -> None:
    assert AdaptivePolicy.from_dict({"initial": 2, "confidence": 0.95}).rule == LEGACY_RULE
    assert AdaptivePolicy.from_dict(AdaptivePolicy().as_dict()) == AdaptivePolicy()
    assert AdaptivePolicy().level == 0.99 and AdaptivePolicy(boundary=0.5).level == 0.95


def test_more_confidence_needs_more_repeats() -> None:
    prior = Prior(0.4, 0.2, 2.0, 2.0)
    n = np.arange(2, 60, dtype=np.int64)
    first_settled = [
        int(n[~unsettled(n, np.zeros_like(n), AdaptivePolicy(confidence=c), prior)][0]) for c in (0.9, 0.99)
    ]
    assert first_settled[0] < first_settled[1]


def test_fit_recovers_the_spread_of_a_simulated_run() -> None:
    rng = np.random.default_rng(3)
    tasks = 4000
    kind = rng.choice(3, size=tasks, p=[0.35, 0.2, 0.45])
    p = np.where(kind == 0, 0.0, np.where(kind == 1, 1.0, rng.beta(2.0, 2.0, tasks)))
    n = np.full(tasks, 8, dtype=np.int64)
    s = rng.binomial(n, p).astype(np.int64)
    prior = fit_prior(n, s)
    assert prior.never == pytest.approx(0.35, abs=0.03)
    assert prior.always == pytest.approx(0.2, abs=0.03)
    assert prior.a == pytest.approx(2.0, rel=0.35) and prior.b == pytest.approx(2.0, rel=0.35)


def test_few_tasks_stay_close_to_the_uniform_prior() -> None:
    # Three all-fail tasks alone must not convince the fit that p = 0 is certain.
    prior = fit_prior(_a(4, 4, 4), _a(0, 0, 0))
    assert prior.never < 0.8
    assert unsettled(_a(4, 4, 4), _a(0, 0, 0), AdaptivePolicy(), prior).all()


def test_allocation_goes_only_to_open_tasks_and_respects_the_cap() -> None:
    policy = AdaptivePolicy(initial=4, max_per_task=10, step=4)
    allocated = _a(4, 8, 10, 4, 9)
    open_ = np.array([True, True, True, False, True])
    assert allocate(allocated, open_, policy).tolist() == [4, 2, 0, 0, 1]


def test_budget_serves_the_tasks_with_fewest_rollouts_first_and_is_never_exceeded() -> None:
    policy = AdaptivePolicy(initial=4, max_per_task=16, step=4, budget=30)
    allocated = _a(8, 4, 4, 12)  # 28 spent, 2 left
    open_ = np.ones(4, dtype=bool)
    add = allocate(allocated, open_, policy)
    assert add.tolist() == [0, 2, 0, 0]  # task 1: fewest rollouts, first in order
    assert allocate(_a(16, 14), np.ones(2, dtype=bool), policy).tolist() == [0, 0]  # budget spent


def test_boundary_decision_uses_the_jeffreys_posterior() -> None:
    policy = AdaptivePolicy(boundary=0.5, confidence=0.95)
    n = _a(4, 4, 20, 20, 20)
    s = _a(4, 2, 18, 10, 2)
    open_ = unsettled(n, s, policy)
    # P(p <= 0.5) under Beta(s + 1/2, n - s + 1/2): settled when outside (0.05, 0.95)
    below = betainc(s + 0.5, n - s + 0.5, 0.5)
    assert ((below > 0.05) & (below < 0.95)).tolist() == open_.tolist()
    assert open_.tolist() == [False, True, False, True, False]
    assert classify(n, s, policy) == ["above", "open", "above", "open", "below"]


def test_classify_words_for_the_informative_decision() -> None:
    prior = Prior(0.3, 0.3, 1.0, 1.0)  # 0 of 4: a pass by the cap is likely (open); 0 of 30: past the cap
    words = classify(_a(4, 30, 30, 4), _a(2, 0, 30, 0), AdaptivePolicy(), prior)
    assert words == ["informative", "never", "always", "open"]


@pytest.mark.parametrize(
    ("policy", "fragment"),
    [
        (AdaptivePolicy(initial=1), "--adaptive-initial must be >= 2"),
        (AdaptivePolicy(initial=8, max_per_task=4), "--adaptive-max (4) must be >= --adaptive-initial (8)"),
        (AdaptivePolicy(budget=0), "--adaptive-budget must be >= 1"),
        (AdaptivePolicy(step=0), "--adaptive-step must be >= 1"),
        (AdaptivePolicy(confidence=1.0), "--adaptive-confidence must be in (0.5, 1)"),
        (AdaptivePolicy(boundary=1.0), "--adaptive-boundary must be a pass rate in (0, 1)"),
    ],
)
def test_bad_settings_are_named_in_flag_terms(policy: AdaptivePolicy, fragment: str) -> None:
    assert any(fragment in problem for problem in policy.problems())


def test_a_boundary_decision_may_start_from_one_rollout() -> None:
    assert AdaptivePolicy(initial=1, boundary=0.5).problems() == []
