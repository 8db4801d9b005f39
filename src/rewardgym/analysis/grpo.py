"""Section 2: the GRPO zero-signal forecast — how many groups of G rollouts of a task will carry no signal.

A GRPO group of G rollouts of one task gives no gradient when all G rewards are equal. Contract (pure):

- a task is *binary* when every counted reward is 0 or 1. Its probability that a fresh group is all-equal
  is the posterior predictive E[p^G + (1 − p)^G] under the pool's fitted prior
  (:func:`rewardgym.stats.prior.fit_pool_prior`: weights on p = 0, on a grid in between and on p = 1,
  fitted to the binary tasks by maximum marginal likelihood) —
  :meth:`rewardgym.stats.posterior.TaskPosterior.all_equal`. A Jeffreys
  posterior per task (the earlier forecast) puts no mass at 0 or 1 and was 5–14 points off on pools with
  many never / always solved tasks; this one is within 2 points in the calibration suite
  (``benchmarks/statistics``) wherever G is at most twice the repeats. :meth:`Forecast.share_range` gives
  the forecast under the grid prior and every parametric prior the data cannot rule out: with few
  repeats a G well above them is an extrapolation (0 of 4 cannot tell a task never solved from one solved
  one time in twenty), and the range says how far it can go;
- any other task uses the plug-in Σ_v f_v^G over its observed reward values v with frequencies f_v (no
  prior: with few repeats it overstates the zero-signal chance of a task whose values all agree);
- tasks without counted rollouts are left out (NaN);
- dataset level: the informative share at G is 1 − mean over tasks of P(all equal) (every task weighs
  the same: a GRPO batch samples prompts, then G rollouts each);
- ``keep`` masks select the tasks that stay after a filter (dropping tasks settled at 0 % / 100 %, or all
  tasks observed at 0 % / 100 %);
- :func:`smallest_group` finds the smallest G ≥ 2 (up to ``limit``) whose share reaches a target, by
  bisection: P(all equal) never grows with G, so the share never falls.
"""

from __future__ import annotations

import numpy as np

from rewardgym.stats.arrays import BoolArray, FloatArray, IntArray
from rewardgym.stats.posterior import TaskPosterior, posterior
from rewardgym.stats.prior import GridPrior, Prior, fit_pool_prior

DEFAULT_GROUP_SIZES = (2, 4, 8, 16, 32, 64)
DEFAULT_TARGET = 0.5
GROUP_LIMIT = 4096


def binary_tasks(task_starts: IntArray, counted: BoolArray, reward: FloatArray) -> BoolArray:
    """Tasks whose counted rewards are all 0 or 1."""
    if task_starts.shape[0] == 0:
        return np.zeros(0, np.bool_)
    odd = counted & (reward != 0) & (reward != 1)
    return np.asarray(np.add.reduceat(odd.astype(np.int64), task_starts) == 0, dtype=np.bool_)


def value_frequencies(
    task_id: IntArray, counted: BoolArray, reward: FloatArray
) -> tuple[IntArray, FloatArray]:
    """``(task position, frequency)`` of every distinct (task, reward value) among counted rollouts.

    ``task_id`` is the task's position (0, 1, …) per rollout, rollouts sorted by task.
    """
    positions = task_id[counted]
    values = reward[counted]
    if positions.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    order = np.lexsort((values, positions))
    positions, values = positions[order], values[order]
    new = np.concatenate(([True], (positions[1:] != positions[:-1]) | (values[1:] != values[:-1])))
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, positions.shape[0]))
    owner = positions[starts]
    totals = np.bincount(positions, minlength=int(owner.max()) + 1)
    return owner.astype(np.int64), (counts / totals[owner]).astype(np.float64)


def plugin_all_equal(owner: IntArray, freq: FloatArray, tasks: int, group: int) -> FloatArray:
    """Σ_v f_v^G per task (NaN for a task without values)."""
    total = np.bincount(owner, weights=freq**group, minlength=tasks).astype(np.float64)
    seen = np.bincount(owner, minlength=tasks) > 0
    return np.where(seen, total, np.nan)


class Forecast:
    """P(all equal) per task for any G, from counts (binary tasks) or value frequencies (the rest)."""

    def __init__(
        self, n: IntArray, s: IntArray, binary: BoolArray, owner: IntArray, freq: FloatArray
    ) -> None:
        self.n, self.s, self.binary = n, s, binary
        # Only the non-binary tasks' value frequencies matter; keep just those.
        keep = ~binary[owner] if owner.shape[0] else np.zeros(0, np.bool_)
        self.owner, self.freq = owner[keep], freq[keep]
        fitted = binary & (n > 0)
        self.prior: GridPrior = fit_pool_prior(n[fitted], s[fitted])
        self.posterior: TaskPosterior = posterior(n, s, self.prior)
        self._all_equal: dict[int, FloatArray] = {}
        """``all_equal`` per group size: the document asks for each size under three task filters and
        the bisections revisit sizes."""

    @property
    def tasks(self) -> int:
        return int(self.n.shape[0])

    def all_equal(self, group: int) -> FloatArray:
        """P(a group of ``group`` rollouts is all-equal) per task (NaN without counted rollouts)."""
        cached = self._all_equal.get(group)
        if cached is None:
            closed = self.posterior.all_equal(group)
            plug = plugin_all_equal(self.owner, self.freq, self.tasks, group)
            cached = self._all_equal[group] = np.where(self.binary & (self.n > 0), closed,
                                                       np.where(self.n > 0, plug, np.nan))  # fmt: skip
            cached.flags.writeable = False  # shared between callers
        return cached

    def informative_share(self, group: int, keep: BoolArray | None = None) -> float | None:
        """Expected share of groups with signal over the kept tasks (None when none is kept)."""
        p = self.all_equal(group)
        mask = ~np.isnan(p) if keep is None else keep & ~np.isnan(p)
        if not bool(mask.any()):
            return None
        return float(1.0 - p[mask].mean())

    def share_range(self, group: int) -> tuple[float, float] | None:
        """Lowest and highest informative share at ``group`` over the priors the data cannot rule out
        (:attr:`rewardgym.stats.prior.PriorFit.plausible`; None without counted rollouts)."""
        p = self.all_equal(group)
        counted = ~np.isnan(p)
        if not bool(counted.any()):
            return None
        binary = self.binary & (self.n > 0)
        fixed = float(p[counted & ~binary].sum())
        base = int(self.n.max(initial=0)) + 1
        keys, weight = np.unique(self.n[binary] * base + self.s[binary], return_counts=True)
        pairs = np.stack([keys // base, keys % base], axis=1)
        kept = int(np.count_nonzero(counted))
        shares = [self.informative_share(group) or 0.0]
        for never, always, a, b in self.prior.fit.plausible.tolist():
            other = posterior(pairs[:, 0], pairs[:, 1], Prior(never, always, a, b))
            shares.append(1.0 - (fixed + float(other.all_equal(group) @ weight)) / kept)
        return min(shares), max(shares)

    def smallest_group(
        self, target: float, keep: BoolArray | None = None, limit: int = GROUP_LIMIT
    ) -> int | None:
        """Smallest G in [2, limit] whose informative share reaches ``target`` (None if none does)."""
        top = self.informative_share(limit, keep)
        if top is None or top < target:
            return None
        low, high = 2, limit
        while low < high:
            middle = (low + high) // 2
            share = self.informative_share(middle, keep)
            if share is not None and share >= target:
                high = middle
            else:
                low = middle + 1
        return low
