"""The posterior model against numerical integration, and the prior fit against known pools."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy import integrate, stats

from rewardgym.stats.posterior import posterior
from rewardgym.stats.prior import (
    UNIFORM_PRIOR,
    GridPrior,
    Prior,
    PriorFit,
    fit_pool_prior,
    fit_prior,
    fit_priors,
    grid_support,
    marginal_log_likelihood,
)
from rewardgym.stats.simulate import POOLS

PRIOR = Prior(0.25, 0.15, 1.5, 2.5)


def _expect(n: int, s: int, func: Callable[[float], float]) -> float:
    """E[func(p) | s of n] under PRIOR by integrating the mixture directly."""
    beta = stats.beta(PRIOR.a, PRIOR.b)
    like_mid, _ = integrate.quad(lambda p: p**s * (1 - p) ** (n - s) * beta.pdf(p), 0, 1, limit=200)
    num_mid, _ = integrate.quad(lambda p: func(p) * p**s * (1 - p) ** (n - s) * beta.pdf(p), 0, 1, limit=200)
    zero = PRIOR.never * (s == 0)
    one = PRIOR.always * (s == n)
    total = zero + one + PRIOR.between * like_mid
    return float((zero * func(0.0) + one * func(1.0) + PRIOR.between * num_mid) / total)


@pytest.mark.parametrize(("n", "s"), [(4, 0), (4, 2), (8, 8), (1, 1), (16, 3), (0, 0)])
def test_grid_posterior_is_the_discrete_bayes_rule(n: int, s: int) -> None:
    rng = np.random.default_rng(n * 31 + s)
    weight = rng.dirichlet(np.ones(grid_support().shape[0]))
    prior = GridPrior(grid_support(), weight, PriorFit.single(PRIOR))
    post = posterior(np.array([n]), np.array([s]), prior)
    x = grid_support()
    joint = weight * x**s * (1 - x) ** (n - s)
    w = joint / joint.sum()
    assert post.mean()[0] == pytest.approx(float(w @ x), rel=1e-12)
    for g in (2, 8, 32):
        assert post.all_equal(g)[0] == pytest.approx(float(w @ (x**g + (1 - x) ** g)), rel=1e-12)
    assert post.pass_at_k(5)[0] == pytest.approx(float(w @ (1 - (1 - x) ** 5)), rel=1e-12)
    assert post.cdf(0.3)[0] == pytest.approx(float(w[x <= 0.3].sum()), rel=1e-12)
    assert post.w0[0] == pytest.approx(float(w[0]), abs=1e-15)


@pytest.mark.parametrize(("n", "s"), [(4, 0), (4, 2), (8, 8), (16, 3), (0, 0)])
def test_a_parametric_prior_on_the_grid_matches_integration(n: int, s: int) -> None:
    post = posterior(np.array([n]), np.array([s]), PRIOR)
    for g in (2, 8, 32):

        def equal(p: float, g: int = g) -> float:
            return float(p**g + (1 - p) ** g)

        assert post.all_equal(g)[0] == pytest.approx(_expect(n, s, equal), abs=2e-3)
    assert post.mean()[0] == pytest.approx(_expect(n, s, lambda p: p), abs=2e-3)
    assert post.expectation_var()[0] == pytest.approx(_expect(n, s, lambda p: p * (1 - p)), abs=2e-3)
    assert post.w0[0] + post.w1[0] <= 1.0


def test_point_masses_only_where_the_data_allow_them() -> None:
    post = posterior(np.array([8, 8, 8]), np.array([0, 3, 8]), PRIOR)
    assert post.w0.tolist()[1:] == [0.0, 0.0] and post.w1.tolist()[:2] == [0.0, 0.0]
    assert post.w0[0] > 0.5 and post.w1[2] > 0.5


def test_fit_recovers_a_pool_of_its_own_form() -> None:
    rng = np.random.default_rng(5)
    tasks = 4000
    kind = rng.choice(3, size=tasks, p=[0.3, 0.2, 0.5])
    p = np.where(kind == 0, 0.0, np.where(kind == 1, 1.0, rng.beta(1.0, 1.0, tasks)))
    n = np.full(tasks, 16)
    s = rng.binomial(n, p)
    prior = fit_prior(n, s)
    assert prior.never == pytest.approx(0.3, abs=0.03) and prior.always == pytest.approx(0.2, abs=0.03)
    assert 0.7 < prior.a < 1.4 and 0.7 < prior.b < 1.4
    # the maximum: no prior of the plausible set is more likely than the best one
    fit = fit_priors(n, s)
    best = marginal_log_likelihood(n, s, fit.best)
    for row in fit.plausible.tolist():
        assert marginal_log_likelihood(n, s, Prior(*row)) <= best + 1e-6 + 6.0 / 3 * np.log(3)


def test_few_tasks_stay_near_the_uniform_prior_and_none_gives_it() -> None:
    assert fit_prior(np.zeros(3, np.int64), np.zeros(3, np.int64)) == UNIFORM_PRIOR
    prior = fit_prior(np.array([4, 4]), np.array([0, 0]))
    assert prior.never < 0.6  # two unsolved tasks do not make every task impossible
    assert prior.between > 0.2


def test_every_reward_zero_gives_almost_no_signal() -> None:
    n = np.full(24, 8)
    s = np.zeros(24, np.int64)
    post = posterior(n, s, fit_pool_prior(n, s))
    assert 1 - post.all_equal(8).mean() < 0.02  # the old Jeffreys forecast said 37 %


def test_pools_cover_what_users_have() -> None:
    rng = np.random.default_rng(1)
    for pool in POOLS.values():
        p = pool.draw(rng, 2000)
        assert np.all((p >= 0) & (p <= 1))
        assert abs(float(np.mean(p == 0)) - pool.never) < 0.05


def test_the_grid_prior_holds_two_bumps_a_single_beta_cannot() -> None:
    rng = np.random.default_rng(2)
    p = POOLS["bimodal"].draw(rng, 3000)
    n = np.full(3000, 8)
    s = rng.binomial(n, p)
    truth = 1 - float(np.mean(p**16 + (1 - p) ** 16))
    grid = 1 - float(posterior(n, s, fit_pool_prior(n, s)).all_equal(16).mean())
    single = 1 - float(posterior(n, s, fit_prior(n, s)).all_equal(16).mean())
    assert abs(grid - truth) < 0.02 < abs(single - truth)
