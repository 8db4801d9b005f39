"""A test of association that respects clustering: the within-task permutation test, in closed form.

Why: rollouts of one task share its difficulty and its typical length, so a pooled rank correlation of
length with reward over all rollouts treats them as independent and calls an effect that is only task
difficulty (its p-value was below 0.05 in 25 % of runs with no length effect at all). Within a task,
under "length says nothing about reward" every pairing of the task's lengths with its rewards is equally
likely; permuting inside tasks keeps every task's difficulty and typical length.

Contract of :func:`within_group_test(x, y, group)`: ``x`` and ``y`` are centred within their group (the
within-task centred ranks of :mod:`rewardgym.analysis.length`), ``group`` numbers the groups 0 … G − 1.
The statistic is T = Σ x·y. Under the within-group permutation distribution E[T] = 0 and
Var[T] = Σ_g (Σ x²)(Σ y²) / (n_g − 1) over groups with n_g ≥ 2 (the exact permutation moments); the
two-sided p-value is that of the normal approximation, 2 Φ(−|T| / √Var[T]) (a sum over many independent
groups). With fewer than :data:`NORMAL_FROM` groups the sum is too short for that: the p-value is then the
share of :data:`PERMUTATIONS` seeded within-group permutations whose |T| reaches the observed one (the
observed pairing counted, so it is never 0). None when no group has both values varying.
"""

from __future__ import annotations

import math

import numpy as np

from rewardgym.stats.arrays import FloatArray, IntArray
from rewardgym.stats.special import ufuncs

NORMAL_FROM = 30
PERMUTATIONS = 4000


def _permutation_p(x: FloatArray, y: FloatArray, group: IntArray, observed: float) -> float:
    rng = np.random.default_rng(0)  # seeded: the same files give the same p-value
    order = np.argsort(group, kind="stable")
    x, y, group = x[order], y[order], group[order]
    hits = 1  # the observed pairing is one of the permutations
    for start in range(0, PERMUTATIONS, 500):
        count = min(500, PERMUTATIONS - start)
        keys = rng.random((count, x.shape[0])) + group[None, :]  # shuffles only within a group
        shuffled = y[np.argsort(keys, axis=1)]
        hits += int(np.count_nonzero(np.abs(shuffled @ x) >= abs(observed) - 1e-12))
    return hits / (PERMUTATIONS + 1)


def within_group_test(x: FloatArray, y: FloatArray, group: IntArray) -> float | None:
    """Two-sided p-value of the within-group permutation test (see module doc)."""
    if x.shape[0] == 0:
        return None
    groups = int(group.max()) + 1
    size = np.bincount(group, minlength=groups).astype(np.float64)
    xx = np.bincount(group, weights=x * x, minlength=groups)
    yy = np.bincount(group, weights=y * y, minlength=groups)
    usable = size >= 2
    variance = float(np.sum(xx[usable] * yy[usable] / (size[usable] - 1.0)))
    if variance <= 0:
        return None
    statistic = float(np.sum(x * y))
    if int(np.count_nonzero(usable)) < NORMAL_FROM:
        return _permutation_p(x, y, group, statistic)
    return float(2.0 * ufuncs().ndtr(-abs(statistic) / math.sqrt(variance)))
