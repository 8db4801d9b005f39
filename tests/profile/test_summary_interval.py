"""The profile summary's interval of the mean pass rate: inside [0, 1], never of width 0 for pass rates."""

from __future__ import annotations

import numpy as np
import pytest

from rewardgym.profile.compute.report import rates_summary


def test_every_task_at_zero_gives_the_exact_bound() -> None:
    summary = rates_summary(np.zeros(24))
    assert summary.interval == pytest.approx((0.0, 1 - 0.025 ** (1 / 24)))
    assert summary.method == "exact bound"
    low, high = rates_summary(np.ones(24)).interval or (0.0, 0.0)
    assert high == 1.0 and low == pytest.approx(0.025 ** (1 / 24))


def test_a_wide_t_interval_is_kept_inside_the_reward_range() -> None:
    summary = rates_summary(np.array([0.0, 0.5, 1.0]))
    assert summary.interval == (0.0, 1.0) and summary.method == "t-interval"
    # rewards outside [0, 1] are not pass rates: the t-interval as it is
    raw = rates_summary(np.array([-2.0, 0.5, 3.0]))
    assert raw.interval is not None and raw.interval[0] < -2.0


def test_equal_inner_rates_get_hoeffdings_interval() -> None:
    summary = rates_summary(np.full(50, 0.5))
    half = np.sqrt(np.log(2 / 0.05) / 100)
    assert summary.interval == pytest.approx((0.5 - half, 0.5 + half))
    assert summary.method == "Hoeffding interval"


def test_coverage_of_the_exact_bound_holds_for_tasks_near_zero() -> None:
    # 24 tasks at p = 0.15 (above the bound's 0.1425): all showing 0 of 8 must be rare (< 2.5 %)
    rng = np.random.default_rng(0)
    zero_runs = np.mean(np.all(rng.binomial(8, 0.15, (20000, 24)) == 0, axis=1))
    assert zero_runs < 0.025
