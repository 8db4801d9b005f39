"""Task pools with known pass probabilities, and runs of them — the truth every number is checked against.

Contract:

- :class:`Pool` draws per-task pass probabilities p. :data:`POOLS` are the pools users have, most of
  them *not* of the model's own form (a point mass at 0 and 1 plus one Beta): no pure tasks, balanced,
  many pure, hard, rare successes, bimodal (two bumps), and a spread that is uniform on [0.05, 0.95]
  beside 30 % never-solved tasks (the pool that talked the old adaptive rule into giving up early);
- :func:`fixed_run` draws ``repeats`` Bernoulli(p) rollouts per task:
  :class:`~rewardgym.stats.sequential.Blocks` with one block;
- :func:`adaptive_run` plays ``gym eval run --adaptive`` on the same kind of draws with the collector's
  own rule (:mod:`rewardgym.stats.adaptive`: the prior refitted after every round, the settle test, the
  allocation with its caps and budget): per task its blocks, as the collector would have stored them.

Pure numpy, seeded by the caller's generator. The calibration suite (``benchmarks/statistics``), the tests
and ``gym eval run --adaptive``'s cost estimate all run on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rewardgym.stats.adaptive import AdaptivePolicy, allocate, unsettled
from rewardgym.stats.arrays import BoolArray, FloatArray, IntArray
from rewardgym.stats.prior import Prior, PriorFit, fit_priors
from rewardgym.stats.sequential import Blocks

Sampler = Callable[[np.random.Generator, int], FloatArray]


@dataclass(frozen=True)
class Pool:
    """A named way to draw task pass probabilities."""

    name: str
    description: str
    never: float
    always: float
    middle: Sampler
    """Draws the p of the tasks that are neither (values in (0, 1))."""

    def draw(self, rng: np.random.Generator, tasks: int) -> FloatArray:
        kind = rng.choice(3, size=tasks, p=[self.never, self.always, 1.0 - self.never - self.always])
        middle = np.clip(self.middle(rng, tasks), 1e-6, 1 - 1e-6)
        return np.asarray(np.where(kind == 0, 0.0, np.where(kind == 1, 1.0, middle)), dtype=np.float64)


def _beta(a: float, b: float) -> Sampler:
    return lambda rng, size: np.asarray(rng.beta(a, b, size), dtype=np.float64)


def _uniform(low: float, high: float) -> Sampler:
    return lambda rng, size: np.asarray(rng.uniform(low, high, size), dtype=np.float64)


def _two_bumps(rng: np.random.Generator, size: int) -> FloatArray:
    low = rng.beta(2.0, 14.0, size)
    high = rng.beta(14.0, 2.0, size)
    return np.asarray(np.where(rng.random(size) < 0.5, low, high), dtype=np.float64)


POOLS: dict[str, Pool] = {
    pool.name: pool
    for pool in (
        Pool("no-pure", "no task never or always solved; p ~ Beta(2, 2)", 0.0, 0.0, _beta(2.0, 2.0)),
        Pool("balanced", "20 % never, 15 % always, the rest uniform", 0.20, 0.15, _beta(1.0, 1.0)),
        Pool("many-pure", "30 % never, 20 % always, the rest uniform", 0.30, 0.20, _beta(1.0, 1.0)),
        Pool(
            "hard",
            "45 % never, 5 % always, the rest Beta(0.5, 3) (mostly below 0.2)",
            0.45,
            0.05,
            _beta(0.5, 3.0),
        ),
        Pool(
            "rare", "60 % never, no always, the rest uniform on [0.01, 0.15]", 0.60, 0.0, _uniform(0.01, 0.15)
        ),
        Pool(
            "bimodal",
            "10 % never, 10 % always, the rest near 0.12 or near 0.88 (two bumps)",
            0.10,
            0.10,
            _two_bumps,
        ),
        Pool(
            "never-rich",
            "30 % never, 10 % always, the rest uniform on [0.05, 0.95]",
            0.30,
            0.10,
            _uniform(0.05, 0.95),
        ),
    )
}


def fixed_run(p: FloatArray, repeats: int, rng: np.random.Generator) -> Blocks:
    """``repeats`` rollouts per task, one block."""
    s = rng.binomial(repeats, p).astype(np.int64)
    m = np.full((p.shape[0], 1), repeats, np.int64)
    return Blocks(m, s[:, None], np.ones(p.shape[0], np.int64))


@dataclass(frozen=True)
class AdaptiveRun:
    blocks: Blocks
    allocated: IntArray
    fits: list[PriorFit | None]
    """The prior fit after every round (what the rule used), for replaying."""


def draw_outcomes(p: FloatArray, rollouts: int, rng: np.random.Generator) -> BoolArray:
    """``rollouts`` Bernoulli(p) outcomes per task (row), in rollout order."""
    return np.asarray(rng.random((p.shape[0], rollouts)) < p[:, None], dtype=np.bool_)


def fixed_from(outcomes: BoolArray, repeats: int) -> Blocks:
    """The first ``repeats`` of ``outcomes`` as a fixed run (paired with an adaptive run on the same
    draws)."""
    tasks = outcomes.shape[0]
    s = outcomes[:, :repeats].sum(axis=1).astype(np.int64)
    return Blocks(np.full((tasks, 1), repeats, np.int64), s[:, None], np.ones(tasks, np.int64))


def adaptive_run(
    p: FloatArray, policy: AdaptivePolicy, rng: np.random.Generator, outcomes: BoolArray | None = None
) -> AdaptiveRun:
    """The collector's rounds on Bernoulli(p) outcomes (see module doc); ``outcomes`` (tasks × at least
    ``max_per_task``) are drawn when not given, to pair the run with a fixed one on the same draws."""
    tasks = p.shape[0]
    if outcomes is None:
        outcomes = draw_outcomes(p, policy.max_per_task, rng)
    outcomes = outcomes[:, : policy.max_per_task]
    allocated = np.full(tasks, min(policy.initial, policy.max_per_task), np.int64)
    history = [allocated.copy()]
    fits: list[PriorFit | None] = []
    spent = int(allocated.sum())
    while True:
        columns = np.arange(policy.max_per_task)[None, :] < allocated[:, None]
        n = allocated
        s = (outcomes & columns).sum(axis=1).astype(np.int64)
        fit = fit_priors(n, s) if policy.boundary is None else None
        fits.append(fit)
        add = allocate(allocated, unsettled(n, s, policy, fit), policy, spent=spent)
        if not add.any():
            break
        allocated = allocated + add
        spent += int(add.sum())
        history.append(allocated.copy())
    width = len(history)
    m = np.zeros((tasks, width), np.int64)
    x = np.zeros((tasks, width), np.int64)
    before = np.zeros(tasks, np.int64)
    cumulative = np.concatenate([np.zeros((tasks, 1), np.int64), np.cumsum(outcomes, axis=1)], axis=1)
    rows = np.arange(tasks)
    for k, after in enumerate(history):
        m[:, k] = after - before
        x[:, k] = cumulative[rows, after] - cumulative[rows, before]
        before = after
    last = np.where(m.any(axis=1), width - np.argmax(m[:, ::-1] > 0, axis=1), 0)
    return AdaptiveRun(Blocks(m, x, np.asarray(last, np.int64)), allocated, fits)


def prior_pool(prior: Prior) -> Pool:
    """A pool drawn from a fitted prior (for "what would this design cost here" estimates)."""
    return Pool("fitted", "the run's fitted prior", prior.never, prior.always, _beta(prior.a, prior.b))
