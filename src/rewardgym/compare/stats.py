"""The statistics of a comparison of two runs over matched tasks (pure; numpy in, numpy / numbers out).

Contract (``n`` counted rollouts and ``s`` passes per task, run A the reference, B the other):

- :func:`fisher_p`: per task, the two-sided Fisher exact p-value of the 2 × 2 table (passes and failures
  of A and of B) — scipy's definition, without importing ``scipy.stats`` (seconds); computed once per
  distinct ``(n_a, s_a, n_b, s_b)``;
- :func:`prob_b_better`: per task, P(p_B > p_A) when p_A and p_B follow their Jeffreys posteriors
  Beta(s + ½, n − s + ½) — the posterior :mod:`rewardgym.analysis.uncertainty` draws its intervals from.
  It is E_A[1 − F_B(p_A)], integrated by the midpoint rule over the quantiles of p_A (error < 0.002);
- :func:`bh_qvalues`: Benjamini–Hochberg adjusted p-values; a task is *significant* when q ≤ the FDR;
- :func:`transitions`: per task, one of :data:`TRANSITIONS`. Only a significant task changes: it is
  ``newly_solved`` when A never passed it, ``newly_failed`` when B never passes it, else ``improved`` /
  ``regressed`` by the direction of the pass rates; every other task is ``unchanged`` (no detectable
  change at that FDR — its observed rates may still differ);
- :func:`paired_bootstrap`: the difference of mean pass rate (tasks weigh the same; the per-task
  difference d = rate_B − rate_A keeps the repeats nested in their task) and its *expanded* percentile
  interval from resampling tasks with replacement: the quantiles at Φ(−√(T/(T−1)) · t₁₋α/₂,T−1) instead
  of α/2 (Hesterberg 2015), because the plain percentile interval is too narrow for few tasks (10
  tasks: 10 % false calls at the 5 % level instead of 5 %); for many tasks the two agree. Resampling T
  tasks is a multinomial draw over the distinct values of d, which is exactly the same distribution at
  a cost independent of T; with more than
  :data:`DISTINCT_MAX` distinct values tasks are resampled by index, in blocks. Seeded;
- :func:`verdict`: ``improved`` when the interval lies above 0, ``regressed`` below, else
  ``no detectable change``;
- :func:`minimum_detectable`: the smallest true difference the same test finds with the given power,
  (critical + z_power) × SE with :func:`critical` the interval's critical value and SE
  :func:`sampling_se` — the standard error the mean difference has under "no change" from the binomial
  sampling of each task's rollouts: √(Σ_t E[p_t(1 − p_t)] (1/m_A,t + 1/m_B,t)) / T, E[p(1 − p)] from each
  task's posterior under the prior fitted to both runs' pooled counts (:mod:`rewardgym.stats.posterior`),
  m the task's rollouts (for an adaptive run its first round, which its unbiased estimate mostly rests
  on). Not the bootstrap's SE: that one is taken from the observed differences, so a run compared with
  itself could "detect ±0.0 pp". Below :data:`MIN_TASKS` tasks no detectable difference is given (the
  critical value of 5 tasks is 3.1: "±112 pp"); :func:`power_at` the power at a difference (normal
  approximation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rewardgym.stats.arrays import FloatArray, IntArray
from rewardgym.stats.special import ufuncs

MIN_TASKS = 10
"""Fewer matched tasks than this: "too few tasks to tell" instead of a minimum detectable difference."""
TRANSITIONS = ("newly_solved", "newly_failed", "improved", "regressed", "unchanged")
NEWLY_SOLVED, NEWLY_FAILED, IMPROVED, REGRESSED, UNCHANGED = range(5)
DISTINCT_MAX = 4096
_QUANTILE_POINTS = 512
_BLOCK = 1 << 22


def combos(*columns: IntArray) -> tuple[IntArray, IntArray]:
    """Distinct rows of the stacked columns and, per task, the index of its row."""
    stacked = np.stack(columns, axis=1).astype(np.int64)
    base = int(stacked.max(initial=0)) + 1
    if base ** len(columns) < 2**62:  # one integer per row: a 1-d unique is ~100 × faster than axis=0
        code = np.zeros(stacked.shape[0], np.int64)
        for k in range(len(columns)):
            code = code * base + stacked[:, k]
        _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
        return stacked[first], inverse.reshape(-1).astype(np.int64)
    unique, inverse = np.unique(stacked, axis=0, return_inverse=True)
    return unique.astype(np.int64), inverse.reshape(-1).astype(np.int64)


def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def _fisher_two_sided(na: int, sa: int, nb: int, sb: int) -> float:
    """Sum of the hypergeometric probabilities of the tables no more likely than the observed one (the
    definition scipy's ``fisher_exact`` uses, with its relative tolerance of 1e-7)."""
    passes = sa + sb
    low, high = max(0, passes - na), min(nb, passes)
    whole = _log_choose(na + nb, passes)
    probs = [math.exp(_log_choose(nb, x) + _log_choose(na, passes - x) - whole) for x in range(low, high + 1)]
    observed = probs[sb - low]
    return min(1.0, math.fsum(p for p in probs if p <= observed * (1 + 1e-7)))


def fisher_p(n_a: IntArray, s_a: IntArray, n_b: IntArray, s_b: IntArray) -> FloatArray:
    """Two-sided Fisher exact p-value per task."""
    if n_a.shape[0] == 0:
        return np.zeros(0, np.float64)
    unique, inverse = combos(n_a, s_a, n_b, s_b)
    values = np.array([_fisher_two_sided(*row) for row in unique.tolist()], np.float64)
    return values[inverse]


def prob_b_better(n_a: IntArray, s_a: IntArray, n_b: IntArray, s_b: IntArray) -> FloatArray:
    """P(p_B > p_A) under the two Jeffreys posteriors, per task."""
    if n_a.shape[0] == 0:
        return np.zeros(0, np.float64)
    betainc, betaincinv = ufuncs().betainc, ufuncs().betaincinv
    unique, inverse = combos(n_a, s_a, n_b, s_b)
    u = (np.arange(_QUANTILE_POINTS) + 0.5) / _QUANTILE_POINTS
    out = np.empty(unique.shape[0], np.float64)
    step = max(1, (1 << 21) // _QUANTILE_POINTS)
    for start in range(0, unique.shape[0], step):
        na, sa, nb, sb = (unique[start : start + step, k, None].astype(np.float64) for k in range(4))
        quantiles_a = betaincinv(sa + 0.5, na - sa + 0.5, u[None, :])
        out[start : start + step] = 1.0 - betainc(sb + 0.5, nb - sb + 0.5, quantiles_a).mean(axis=1)
    return out[inverse]


def bh_qvalues(p: FloatArray) -> FloatArray:
    """Benjamini–Hochberg adjusted p-values (q-values), in the order of ``p``."""
    m = p.shape[0]
    if m == 0:
        return np.zeros(0, np.float64)
    order = np.argsort(p, kind="stable")
    ranked = p[order] * m / np.arange(1, m + 1)
    q = np.minimum(np.minimum.accumulate(ranked[::-1])[::-1], 1.0)
    out = np.empty(m, np.float64)
    out[order] = q
    return out


def transitions(
    s_a: IntArray, rate_a: FloatArray, s_b: IntArray, rate_b: FloatArray, significant: np.ndarray
) -> np.ndarray:
    """Transition code per task (indices into :data:`TRANSITIONS`)."""
    code = np.full(s_a.shape[0], UNCHANGED, np.int8)
    up = significant & (rate_b > rate_a)
    down = significant & (rate_b < rate_a)
    code[up] = IMPROVED
    code[up & (s_a == 0)] = NEWLY_SOLVED
    code[down] = REGRESSED
    code[down & (s_b == 0)] = NEWLY_FAILED
    return code


@dataclass(frozen=True)
class Bootstrap:
    diff: float
    low: float
    high: float
    se: float
    replicates: int
    distinct: int
    """Distinct per-task differences (the multinomial draw's support, or the index path when large)."""


def critical(level: float, tasks: int) -> float:
    """The critical value of the expanded interval: sqrt(T / (T − 1)) · t₁₋α/₂ with T − 1 degrees of
    freedom (the plain percentile interval's is z₁₋α/₂, too small for few tasks)."""
    stdtrit = ufuncs().stdtrit
    if tasks < 2:
        raise ValueError("a paired bootstrap needs at least two tasks")
    return math.sqrt(tasks / (tasks - 1)) * float(stdtrit(tasks - 1, 1 - (1 - level) / 2))


def expanded_tail(level: float, tasks: int) -> float:
    """Tail probability of the expanded percentile interval: Φ(−critical) (Hesterberg 2015)."""
    ndtr = ufuncs().ndtr
    return float(ndtr(-critical(level, tasks)))


def paired_bootstrap(d: FloatArray, replicates: int, seed: int, level: float) -> Bootstrap:
    """Mean of ``d`` with its percentile interval over tasks (see module doc)."""
    rng = np.random.default_rng(seed)
    tasks = d.shape[0]
    values, counts = np.unique(d, return_counts=True)
    means = np.empty(replicates, np.float64)
    if values.shape[0] <= DISTINCT_MAX:
        shares = counts / counts.sum()
        block = max(1, _BLOCK // values.shape[0])
        for start in range(0, replicates, block):
            k = min(block, replicates - start)
            means[start : start + k] = rng.multinomial(tasks, shares, size=k) @ values / tasks
    else:
        block = max(1, _BLOCK // tasks)
        for start in range(0, replicates, block):
            k = min(block, replicates - start)
            means[start : start + k] = d[rng.integers(0, tasks, size=(k, tasks))].mean(axis=1)
    tail = expanded_tail(level, tasks)
    low, high = np.quantile(means, [tail, 1 - tail])
    se = float(means.std(ddof=1)) if replicates > 1 else 0.0
    return Bootstrap(float(d.mean()), float(low), float(high), se, replicates, int(values.shape[0]))


def verdict(boot: Bootstrap) -> str:
    if boot.low > 0:
        return "improved"
    if boot.high < 0:
        return "regressed"
    return "no detectable change"


def sampling_se(var_a: FloatArray, m_a: FloatArray, var_b: FloatArray, m_b: FloatArray) -> float:
    """SE of the mean per-task difference under binomial sampling (see module doc)."""
    tasks = int(var_a.shape[0])
    if tasks == 0:
        return 0.0
    total = float(np.sum(var_a / np.maximum(m_a, 1) + var_b / np.maximum(m_b, 1)))
    return math.sqrt(total) / tasks


def minimum_detectable(se: float, level: float, power: float, tasks: int) -> float:
    """Smallest true difference detected with ``power`` by the two-sided test at ``level``."""
    ndtri = ufuncs().ndtri
    return float((critical(level, tasks) + ndtri(power)) * se)


def power_at(delta: float, se: float, level: float, tasks: int) -> float:
    """Power of the two-sided test at a true difference ``delta``."""
    ndtr = ufuncs().ndtr
    z = critical(level, tasks)
    if se <= 0:
        return 1.0 if delta != 0 else 0.0
    return float(ndtr(delta / se - z) + ndtr(-delta / se - z))


def band_matrix(band_a: IntArray, band_b: IntArray) -> list[list[int]]:
    """7 × 7 task counts: row = band in A, column = band in B."""
    flat = np.bincount(band_a * 7 + band_b, minlength=49)
    return [[int(v) for v in flat[r * 7 : r * 7 + 7]] for r in range(7)]
