"""The decision rule of adaptive repeats (``gym eval run --adaptive``): which tasks need more rollouts.

Contract (pure; numpy in, numpy out; no files, no servers):

- Each task has ``n`` counted rollouts (stored, with a reward) of which ``s`` passed (``reward >=
  pass_threshold``), and ``allocated`` materialized rows (counted, failed for good or still pending).
- **Default decision, "is the task informative for GRPO"** (is its pass probability p in (0, 1)?):
  a task with at least one pass and one fail is settled (informative: no amount of data can change that).
  An all-fail task is settled as "never solved" once, for every prior the data cannot rule out
  (:class:`~rewardgym.stats.prior.PriorFit`: the fitted empirical-Bayes mixture of point masses at 0 and 1
  and a Beta, and the priors within its likelihood-ratio region), the chance that the task is solvable
  *and* would show a pass among the rollouts left to the cap is ≤ 1 − confidence
  (:func:`pass_by_cap_given_all_fail`); all-pass tasks mirrored. So stopping early changes a call that
  ``max_per_task`` fixed repeats would make with probability ≤ 1 − confidence per task, whatever the
  refitted prior says (the earlier rule, "P(p > 0 | 0 of n) ≤ 1 − confidence" under the single best fit,
  was talked into stopping at 6 rollouts by pools rich in never-solved tasks). Default confidence 0.99:
  the calls stay within a point of fixed repeats at the cap in every pool of the calibration suite
  (``benchmarks/statistics``). Runs recorded before this rule are replayed with theirs
  (:data:`LEGACY_RULE`).
- **Band boundary** (``boundary=b``): is p above b? Settled once the Jeffreys posterior Beta(s + ½,
  n − s + ½) — the interval of :mod:`rewardgym.analysis.uncertainty` — puts at least ``confidence`` of
  its mass on one side of b.
- A task with ``allocated >= max_per_task`` is never given more (it stays unsettled if undecided).
- :func:`allocate` gives every unsettled task below the cap ``step`` more rollouts (fewer at the cap);
  with a ``budget`` (total materialized rollouts of the run, the initial round included) the tasks with
  the fewest rollouts are served first, ties by task order, and a round never exceeds what is left.
"""

from __future__ import annotations

import numpy as np

from rewardgym.stats.adaptive_policy import LEGACY_RULE, REGRET_RULE, AdaptivePolicy
from rewardgym.stats.arrays import BoolArray, FloatArray, IntArray
from rewardgym.stats.prior import UNIFORM_PRIOR, Prior, PriorFit, fit_prior, fit_priors
from rewardgym.stats.special import ufuncs

__all__ = [
    "LEGACY_RULE",
    "REGRET_RULE",
    "UNIFORM_PRIOR",
    "AdaptivePolicy",
    "Prior",
    "PriorFit",
    "allocate",
    "classify",
    "fit_prior",
    "fit_priors",
    "unsettled",
]


def p_solvable_given_all_fail(n: IntArray, prior: Prior) -> FloatArray:
    """P(p > 0 | no pass in n rollouts) under ``prior``."""
    betaln = ufuncs().betaln
    between = prior.between * np.exp(betaln(prior.a, prior.b + n) - betaln(prior.a, prior.b))
    return np.asarray(between / (prior.never + between), dtype=np.float64)


def p_failable_given_all_pass(n: IntArray, prior: Prior) -> FloatArray:
    """P(p < 1 | n passes in n rollouts) under ``prior``."""
    return p_solvable_given_all_fail(n, prior.mirrored())


def pass_by_cap_given_all_fail(n: IntArray, cap: int, prior: Prior | FloatArray) -> FloatArray:
    """P(p > 0 and a pass among rollouts n + 1 … cap | no pass in n rollouts) under ``prior``: the chance
    that stopping now calls "never solved" a task that ``cap`` fixed repeats would have seen solved.

    ``prior`` may also be rows ``(never, always, a, b)`` (:attr:`PriorFit.plausible`): then one row of
    values per prior."""
    betaln = ufuncs().betaln
    rows = (
        prior if isinstance(prior, np.ndarray) else np.array([[prior.never, prior.always, prior.a, prior.b]])
    )
    never, always, a, b = (rows[:, k : k + 1] for k in range(4))
    between = np.maximum(1.0 - never - always, 0.0)
    counts = np.asarray(n, np.float64)[None, :]
    base = betaln(a, b)
    now = between * np.exp(betaln(a, b + counts) - base)
    later = between * np.exp(betaln(a, b + np.maximum(counts, cap)) - base)
    total = never + now
    value = np.where(total > 0, (now - later) / np.where(total > 0, total, 1.0), 0.0)
    return np.asarray(value if isinstance(prior, np.ndarray) else value[0], dtype=np.float64)


def _worst_regret(n: IntArray, cap: int, fit: PriorFit, *, passes: bool) -> FloatArray:
    """:func:`pass_by_cap_given_all_fail` (or its mirror for all-pass tasks), the largest over the priors
    the data cannot rule out, once per distinct n."""
    values, inverse = np.unique(n, return_inverse=True)
    rows = fit.plausible[:, [1, 0, 3, 2]] if passes else fit.plausible  # mirrored: passes ↔ failures
    worst = pass_by_cap_given_all_fail(values, cap, rows).max(axis=0)
    return np.asarray(worst[inverse.reshape(-1)], dtype=np.float64)


def unsettled(
    n: IntArray, s: IntArray, policy: AdaptivePolicy, prior: Prior | PriorFit | None = None
) -> BoolArray:
    """Whether each task's decision is still open (see the module doc). ``n == 0`` is always open."""
    doubt = 1.0 - policy.level
    if policy.boundary is not None:
        betainc = ufuncs().betainc
        below = betainc(s + 0.5, n - s + 0.5, policy.boundary)  # Jeffreys P(p <= boundary)
        return np.asarray((n == 0) | ((below < policy.level) & (below > doubt)), dtype=np.bool_)
    if policy.rule == LEGACY_RULE:
        best = prior.best if isinstance(prior, PriorFit) else prior if prior is not None else fit_prior(n, s)
        open_fail = (s == 0) & (p_solvable_given_all_fail(n, best) > doubt)
        open_pass = (s == n) & (p_failable_given_all_pass(n, best) > doubt)
        return np.asarray((n == 0) | open_fail | open_pass, dtype=np.bool_)
    fit = (
        prior
        if isinstance(prior, PriorFit)
        else fit_priors(n, s)
        if prior is None
        else PriorFit.single(prior)
    )
    cap = policy.max_per_task
    open_fail = (s == 0) & (_worst_regret(n, cap, fit, passes=False) > doubt)
    open_pass = (s == n) & (_worst_regret(n, cap, fit, passes=True) > doubt)
    return np.asarray((n == 0) | open_fail | open_pass, dtype=np.bool_)


def allocate(
    allocated: IntArray, open_: BoolArray, policy: AdaptivePolicy, *, spent: int | None = None
) -> IntArray:
    """Rollouts to add per task this round (zeros when nothing is left to do).

    ``spent`` is the run's materialized rollouts so far (default: ``allocated.sum()``), checked against
    ``policy.budget``.
    """
    room = np.maximum(policy.max_per_task - allocated, 0)
    add = np.where(open_, np.minimum(room, policy.round_step), 0).astype(np.int64)
    if policy.budget is None:
        return add
    left = policy.budget - (int(allocated.sum()) if spent is None else spent)
    if left <= 0:
        return np.zeros_like(add)
    if int(add.sum()) <= left:
        return add
    order = np.lexsort((np.arange(allocated.shape[0]), allocated))  # fewest rollouts first, then order
    wanted = add[order]
    before = np.cumsum(wanted) - wanted
    granted = np.clip(left - before, 0, wanted)
    out = np.zeros_like(add)
    out[order] = granted
    return out


def classify(
    n: IntArray, s: IntArray, policy: AdaptivePolicy, prior: Prior | PriorFit | None = None
) -> list[str]:
    """A word per task for the summary: informative / never / always / above / below / open."""
    open_ = unsettled(n, s, policy, prior)
    words = []
    for count, passes, is_open in zip(n.tolist(), s.tolist(), open_.tolist(), strict=True):
        if is_open:
            words.append("open")
        elif policy.boundary is not None:
            words.append("above" if passes / count > policy.boundary else "below")
        elif 0 < passes < count:
            words.append("informative")
        else:
            words.append("never" if passes == 0 else "always")
    return words
