"""The Wilcoxon signed-rank test (two-sided) without importing ``scipy.stats``.

Contract of :func:`wilcoxon_p(differences)`: the p-value ``scipy.stats.wilcoxon(differences).pvalue`` gives
for non-zero, finite differences with scipy's defaults (``zero_method="wilcox"``, ``correction=False``,
``method="auto"``), computed the way scipy computes it:

- ranks of ``|d|``, ties averaged; ``r_plus`` is the sum of the ranks of the positive differences;
- n ≤ 50 and no tied ``|d|``: the exact null distribution of ``r_plus`` (every sign pattern equally
  likely), p = 2 · min(P(R ≤ ⌈r_plus⌉), P(R ≥ ⌊r_plus⌋)), clipped to 1;
- n > 50, or ties with 13 < n ≤ 50: the normal approximation with the tie-corrected variance,
  z = (r_plus − n(n+1)/4) / σ, p = 2 · Φ(−|z|);
- ties with n ≤ 13: scipy's exact permutation test over all 2^n sign patterns — the one case handed
  to ``scipy.stats`` itself (a handful of differences: its import is the only cost).

Why not just call scipy: ``import scipy.stats`` costs ~0.7 s of CPU, more than the rest of the length
analysis of a million rollouts; ``scipy.special`` (the normal tail) is a fraction of that.
"""

from __future__ import annotations

import math

import numpy as np

from rewardgym.stats.arrays import FloatArray
from rewardgym.stats.special import ufuncs

EXACT_UP_TO = 50
"""scipy's ``method="auto"``: the exact distribution up to this many differences (without ties)."""
PERMUTATION_UP_TO = 13
"""scipy's ``method="auto"`` with ties: the (deterministic) permutation test up to this many."""


def _null_distribution(n: int) -> FloatArray:
    """P(R = r) for r = 0 … n(n+1)/2 under the null: each rank joins the positive sum with probability ½."""
    pmf = np.ones(1, dtype=np.float64)
    for k in range(1, n + 1):
        previous = pmf
        pmf = np.zeros(k * (k + 1) // 2 + 1, dtype=np.float64)
        m = previous.shape[0]
        pmf[:m] = previous * 0.5
        pmf[-m:] += previous * 0.5
    return pmf


def _exact_p(r_plus: float, n: int) -> float:
    pmf = _null_distribution(n)
    mean = n * (n + 1) / 4

    def cdf(k: int) -> float:
        return float(pmf[: k + 1].sum()) if k <= mean else 1 - float(pmf[k + 1 :].sum())

    def sf(k: int) -> float:
        return float(pmf[k:].sum()) if k <= mean else 1 - float(pmf[:k].sum())

    p = 2 * min(sf(math.floor(r_plus)), cdf(math.ceil(r_plus)))
    return min(max(p, 0.0), 1.0)


def wilcoxon_p(differences: FloatArray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of non-zero differences (see module doc)."""
    d = np.asarray(differences, dtype=np.float64)
    n = d.shape[0]
    if n == 0:
        return math.nan
    magnitude = np.abs(d)
    order = np.argsort(magnitude, kind="stable")
    ordered = magnitude[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    counts = np.diff(np.append(starts, n))
    ranks = np.empty(n, np.float64)
    ranks[order] = np.repeat((starts + 1).astype(np.float64) + (counts - 1) / 2, counts)
    r_plus = float(ranks[d > 0].sum())
    ties = bool((counts > 1).any())
    if not ties and n <= EXACT_UP_TO:
        return _exact_p(r_plus, n)
    if ties and n <= PERMUTATION_UP_TO:
        from scipy import stats  # rare and tiny: scipy's own permutation test

        return float(stats.wilcoxon(d).pvalue)
    tally = counts.astype(np.float64)
    variance = n * (n + 1.0) * (2.0 * n + 1.0)
    sigma = math.sqrt((variance - float((tally**3 - tally).sum()) / 2) / 24)
    z = (r_plus - n * (n + 1.0) * 0.25) / sigma
    return float(2 * ufuncs().ndtr(-abs(z)))
