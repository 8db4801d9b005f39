"""Each task's posterior over its pass probability p under the pool's fitted prior — the one model behind
every forecast, "settled", P(no signal) and band probability rewardgym prints.

Contract (pure; numpy in, numpy out). The prior is a :class:`~rewardgym.stats.prior.GridPrior` (weights on
p = 0, on 100 points in between and on p = 1; :func:`~rewardgym.stats.prior.fit_pool_prior`) or a
parametric :class:`~rewardgym.stats.prior.Prior` (point masses plus a Beta, put on the same grid). Given
per task ``n`` counted rollouts with ``s`` passes, the posterior weight of each support point is
prior × p^s (1 − p)^(n − s), normalised. The stopping rule of an adaptive run does not change it: the
likelihood of the observed sequence is that, whatever made the run stop. So:

- ``w0`` / ``w1``: the posterior mass on p = 0 (only possible when s = 0) and on p = 1 (only when s = n);
- :meth:`TaskPosterior.mean` — E[p]; :meth:`TaskPosterior.all_equal` — E[p^G + (1 − p)^G], the chance a
  fresh GRPO group of G rollouts carries no signal; :meth:`TaskPosterior.pass_at_k` — E[1 − (1 − p)^k];
  :meth:`TaskPosterior.expectation_var` — E[p (1 − p)], the binomial variance of one rollout;
- :meth:`TaskPosterior.cdf` — P(p ≤ x), and :meth:`TaskPosterior.prob_between` (band probabilities).

A task without rollouts has the prior itself. Every number is computed once per distinct (n, s) pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rewardgym.stats.arrays import FloatArray, IntArray
from rewardgym.stats.prior import GridPrior, Prior, discretize, grid_support, likelihood


@dataclass(frozen=True)
class TaskPosterior:
    """Posterior weights per distinct (n, s) pair and the pair of every task (see module doc)."""

    support: FloatArray
    weights: FloatArray
    """Distinct pairs × support points; rows sum to 1."""
    pair: IntArray
    """Per task, its row of ``weights``."""

    def _expect(self, values: FloatArray) -> FloatArray:
        return np.asarray((self.weights @ values)[self.pair], dtype=np.float64)

    @property
    def w0(self) -> FloatArray:
        return np.asarray(self.weights[self.pair, 0], dtype=np.float64)

    @property
    def w1(self) -> FloatArray:
        return np.asarray(self.weights[self.pair, -1], dtype=np.float64)

    def mean(self) -> FloatArray:
        return self._expect(self.support)

    def all_equal(self, group: int) -> FloatArray:
        return self._expect(self.support**group + (1.0 - self.support) ** group)

    def pass_at_k(self, k: int) -> FloatArray:
        return self._expect(1.0 - (1.0 - self.support) ** k)

    def expectation_var(self) -> FloatArray:
        return self._expect(self.support * (1.0 - self.support))

    def cdf(self, x: float) -> FloatArray:
        """P(p ≤ x) per task."""
        return self._expect((self.support <= x).astype(np.float64))

    def prob_between(self, low: float, high: float) -> FloatArray:
        """P(low < p ≤ high) per task."""
        return self._expect(((self.support > low) & (self.support <= high)).astype(np.float64))


def posterior(n: IntArray, s: IntArray, prior: GridPrior | Prior) -> TaskPosterior:
    """The posterior of every task under ``prior`` (see module doc)."""
    n = np.asarray(n, dtype=np.int64)
    s = np.asarray(s, dtype=np.int64)
    if isinstance(prior, GridPrior):
        support, weight = prior.support, prior.weight
    else:
        support, weight = grid_support(), discretize(prior)
    if n.shape[0] == 0:
        return TaskPosterior(support, np.zeros((0, support.shape[0])), np.zeros(0, np.int64))
    key = n * (int(n.max(initial=0)) + 1) + s
    _, first, pair = np.unique(key, return_index=True, return_inverse=True)
    joint = likelihood(n[first].astype(np.float64), s[first].astype(np.float64), support) * weight[None, :]
    total = joint.sum(axis=1, keepdims=True)
    weights = joint / np.where(total > 0, total, 1.0)
    return TaskPosterior(support, np.asarray(weights, np.float64), pair.reshape(-1).astype(np.int64))
