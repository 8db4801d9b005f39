"""What an adaptive run saves and what it costs, against fixed repeats at its cap — told to the user.

Contract of :func:`expected_cost(prior, policy)`: draws ``tasks`` pass probabilities from the run's own
fitted prior (:func:`rewardgym.stats.simulate.prior_pool`), plays the adaptive rule on them and reads the
same draws with ``policy.max_per_task`` fixed repeats (paired, seeded), and returns for both designs:
rollouts per task, the per-task pass-rate RMSE (the adaptive run's unbiased estimates, s / n for fixed),
the mean width of the 95 % Jeffreys interval, the 7-band accuracy, and the accuracy of the
never / sometimes / always call. Expectations under the fitted prior: a model of this run's tasks, not a
measurement (the calibration suite measures them on pools not of the model's form).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rewardgym.stats.adaptive import AdaptivePolicy
from rewardgym.stats.arrays import FloatArray, IntArray
from rewardgym.stats.bands import band_of
from rewardgym.stats.prior import Prior
from rewardgym.stats.sequential import rao_blackwell
from rewardgym.stats.simulate import adaptive_run, draw_outcomes, fixed_from, prior_pool
from rewardgym.stats.special import ufuncs


@dataclass(frozen=True)
class DesignNumbers:
    rollouts_per_task: float
    rmse: float
    interval_width: float
    band_accuracy: float
    call_accuracy: float


@dataclass(frozen=True)
class DesignCost:
    adaptive: DesignNumbers
    fixed: DesignNumbers
    repeats: int


def _call(n: IntArray, s: IntArray) -> IntArray:
    return np.asarray(np.where(s == 0, 0, np.where(s == n, 2, 1)), dtype=np.int64)


def _numbers(p: FloatArray, n: IntArray, s: IntArray, estimate: FloatArray) -> DesignNumbers:
    betaincinv = ufuncs().betaincinv
    low = np.where(s == 0, 0.0, betaincinv(s + 0.5, n - s + 0.5, 0.025))
    high = np.where(s == n, 1.0, betaincinv(s + 0.5, n - s + 0.5, 0.975))
    truth_call = np.where(p == 0, 0, np.where(p == 1, 2, 1))
    return DesignNumbers(
        rollouts_per_task=float(n.mean()),
        rmse=float(np.sqrt(np.mean((estimate - p) ** 2))),
        interval_width=float(np.mean(high - low)),
        band_accuracy=float(np.mean(band_of(estimate) == band_of(p))),
        call_accuracy=float(np.mean(_call(n, s) == truth_call)),
    )


def expected_cost(prior: Prior, policy: AdaptivePolicy, tasks: int = 1000, seed: int = 0) -> DesignCost:
    """Adaptive vs fixed repeats at the cap under ``prior`` (see module doc)."""
    rng = np.random.default_rng(seed)
    p = prior_pool(prior).draw(rng, tasks)
    outcomes = draw_outcomes(p, policy.max_per_task, rng)
    run = adaptive_run(p, policy, rng, outcomes)
    estimate = rao_blackwell(run.blocks, policy, run.fits)
    fixed = fixed_from(outcomes, policy.max_per_task)
    return DesignCost(
        adaptive=_numbers(p, run.blocks.n, run.blocks.s, estimate),
        fixed=_numbers(p, fixed.n, fixed.s, fixed.s / fixed.n),
        repeats=policy.max_per_task,
    )
