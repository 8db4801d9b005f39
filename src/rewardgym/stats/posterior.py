"""Each task's posterior over its pass probability p under the pool's fitted prior — the one model behind
every forecast, "settled", P(no signal) and band probability rewardgym prints.

Contract (pure; numpy in, numpy out). Given a :class:`~rewardgym.stats.prior.Prior` and per task ``n``
counted rollouts with ``s`` passes, the posterior is again a mixture (the stopping rule of an adaptive run
does not change it: the likelihood of the observed sequence is p^s (1 − p)^(n − s) whatever made the run
stop):

- weight ``w0`` on p = 0 (only when s = 0), ``w1`` on p = 1 (only when s = n) and ``wm`` on
  Beta(a + s, b + n − s); w0 + w1 + wm = 1. A task without rollouts has the prior itself;
- :meth:`TaskPosterior.mean` — E[p];
- :meth:`TaskPosterior.all_equal` — P(a fresh group of G rollouts is all pass or all fail) =
  E[p^G + (1 − p)^G]: the GRPO no-signal probability;
- :meth:`TaskPosterior.pass_at_k` — E[1 − (1 − p)^k];
- :meth:`TaskPosterior.cdf` — P(p ≤ x) (the point mass at 0 counts for x ≥ 0), and from it
  :meth:`TaskPosterior.prob_between` (band probabilities);
- :meth:`TaskPosterior.expectation_var` — E[p (1 − p)], the binomial sampling variance of one rollout.

Every method computes the Beta parts once per distinct (n, s) pair (few: a run with 8 repeats has 9).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rewardgym.stats.arrays import FloatArray, IntArray
from rewardgym.stats.prior import Prior
from rewardgym.stats.special import ufuncs


@dataclass(frozen=True)
class TaskPosterior:
    """Posterior mixture per task (see module doc); arrays in task order."""

    prior: Prior
    n: IntArray
    s: IntArray
    w0: FloatArray
    w1: FloatArray
    wm: FloatArray
    first: IntArray
    """Index of the first task of each distinct (n, s) pair."""
    pair: IntArray
    """Per task, its distinct pair."""

    @property
    def a(self) -> FloatArray:
        return np.asarray(self.prior.a + self.s, dtype=np.float64)

    @property
    def b(self) -> FloatArray:
        return np.asarray(self.prior.b + self.n - self.s, dtype=np.float64)

    def _per_pair(self, values: FloatArray) -> FloatArray:
        return np.asarray(values[self.pair], dtype=np.float64)

    def _beta_ratio(self, da: float, db: float) -> FloatArray:
        """B(a' + da, b' + db) / B(a', b') per task, computed once per pair."""
        betaln = ufuncs().betaln
        a = self.a[self.first]
        b = self.b[self.first]
        return self._per_pair(np.exp(betaln(a + da, b + db) - betaln(a, b)))

    def mean(self) -> FloatArray:
        return np.asarray(self.w1 + self.wm * self.a / (self.a + self.b), dtype=np.float64)

    def all_equal(self, group: int) -> FloatArray:
        beta = self._beta_ratio(group, 0) + self._beta_ratio(0, group)
        return np.asarray(self.w0 + self.w1 + self.wm * beta, dtype=np.float64)

    def pass_at_k(self, k: int) -> FloatArray:
        return np.asarray(self.w1 + self.wm * (1.0 - self._beta_ratio(0, k)), dtype=np.float64)

    def expectation_var(self) -> FloatArray:
        """E[p (1 − p)] per task."""
        return np.asarray(self.wm * self._beta_ratio(1, 1), dtype=np.float64)

    def cdf(self, x: float) -> FloatArray:
        """P(p ≤ x) per task."""
        if x < 0:
            return np.zeros(self.n.shape[0], np.float64)
        if x >= 1:
            return np.ones(self.n.shape[0], np.float64)
        betainc = ufuncs().betainc
        beta = self._per_pair(betainc(self.a[self.first], self.b[self.first], x))
        return np.asarray(self.w0 + self.wm * beta, dtype=np.float64)

    def prob_between(self, low: float, high: float, *, low_closed: bool = False) -> FloatArray:
        """P(low < p ≤ high) per task (``low_closed``: P(low ≤ p ≤ high); matters only at p = 0 and 1)."""
        upper = self.cdf(high)
        lower = self.cdf(low)
        if low_closed and low <= 0:
            lower = np.zeros_like(lower)
        if high >= 1:
            upper = np.ones_like(upper)
        return np.asarray(np.clip(upper - lower, 0.0, 1.0), dtype=np.float64)


def posterior(n: IntArray, s: IntArray, prior: Prior) -> TaskPosterior:
    """The posterior of every task under ``prior`` (see module doc)."""
    betaln = ufuncs().betaln
    n = np.asarray(n, dtype=np.int64)
    s = np.asarray(s, dtype=np.int64)
    key = n * (int(n.max(initial=0)) + 1) + s
    _, first, pair = np.unique(key, return_index=True, return_inverse=True)
    pair = pair.reshape(-1).astype(np.int64)
    nf, sf = n[first].astype(np.float64), s[first].astype(np.float64)
    # Likelihood of the observed sequence under each part (the binomial coefficient is common to all three)
    beta = np.exp(betaln(prior.a + sf, prior.b + nf - sf) - betaln(prior.a, prior.b))
    zero = prior.never * (sf == 0)
    one = prior.always * (sf == nf)
    middle = prior.between * beta
    total = zero + one + middle
    return TaskPosterior(
        prior=prior,
        n=n,
        s=s,
        w0=np.asarray((zero / total)[pair], dtype=np.float64),
        w1=np.asarray((one / total)[pair], dtype=np.float64),
        wm=np.asarray((middle / total)[pair], dtype=np.float64),
        first=first.astype(np.int64),
        pair=pair,
    )
