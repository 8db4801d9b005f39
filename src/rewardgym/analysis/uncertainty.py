"""Section 1: per-task pass counts, Jeffreys intervals, pass-rate bands and whether each task is settled.

Contract (pure; numpy in, numpy out):

- a rollout *passes* when ``reward >= pass_threshold``; rollouts without a numeric reward and masked
  rollouts are not counted. With continuous rewards the threshold turns each reward into pass / fail, so
  bands describe pass rates, not mean rewards;
- per task: ``n`` counted rollouts, ``s`` passes, ``rate = s / n`` and the 95 % Jeffreys interval: the
  2.5 % and 97.5 % quantiles of Beta(s + ½, n − s + ½), with the usual boundary rule (lower = 0 when
  s = 0, upper = 1 when s = n — Brown, Cai & DasGupta 2001);
- ``rate``: the task's pass-rate estimate — s / n for a fixed design; for an adaptive run the caller
  passes the Rao–Blackwell estimate (:mod:`rewardgym.stats.sequential`), unbiased under its stopping rule;
- ``band``: the index in :data:`rewardgym.profile.BAND_LABELS` of the rate (0 %, (0–20 %], …,
  (80–100 %), 100 %), the bands of the profile summary;
- ``band_probability``: P(p in that band | the task's rollouts) under the pool's fitted prior
  (:mod:`rewardgym.stats.posterior`), the two point bands widened by ``epsilon`` (default 0.05: 0 % is
  p ≤ ε, 100 % is p ≥ 1 − ε);
- ``settled``: ``band_probability ≥ confidence``, under the fitted prior and under every prior the data
  cannot rule out (the least favourable: :func:`settled_by_posterior`). Whether more rollouts could
  still move a task out of its band depends on how the pool's tasks spread, which only the fitted prior
  knows (0 of 8 is settled at 0 % in a pool where such tasks are never solved, not in one where they are
  merely hard). The
  Jeffreys interval stays the right *interval* for one task on its own (it is calibrated);
  :func:`settled_in_band` (the interval inside the band) is kept for callers that want that rule;
- tasks with ``n == 0`` have NaN rate and interval, band -1 and are not settled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rewardgym.stats.arrays import BoolArray, FloatArray, IntArray
from rewardgym.stats.bands import EDGES, band_of
from rewardgym.stats.posterior import TaskPosterior, posterior
from rewardgym.stats.prior import GridPrior, Prior, fit_pool_prior, fit_priors
from rewardgym.stats.special import ufuncs

CONFIDENCE = 0.95
DEFAULT_EPSILON = 0.05


@dataclass(frozen=True)
class TaskPasses:
    """Per-task pass counts and intervals, one entry per task (in the given task order)."""

    task: IntArray
    n: IntArray
    passes: IntArray
    rate: FloatArray
    """The pass-rate estimate (s / n for a fixed design; see module doc)."""
    low: FloatArray
    high: FloatArray
    band: IntArray
    band_probability: FloatArray
    settled: BoolArray
    prior: GridPrior | Prior
    """The pool's fitted prior the posterior numbers come from."""


def pass_counts(task_starts: IntArray, counted: BoolArray, passed: BoolArray) -> tuple[IntArray, IntArray]:
    """``(n, s)`` per task segment: counted rollouts and passes among them."""
    if task_starts.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    n = np.add.reduceat(counted.astype(np.int64), task_starts)
    s = np.add.reduceat((counted & passed).astype(np.int64), task_starts)
    return n.astype(np.int64), s.astype(np.int64)


def jeffreys(
    n: IntArray, s: IntArray, confidence: float = CONFIDENCE, *, dedupe: bool = True
) -> tuple[FloatArray, FloatArray]:
    """Lower and upper bounds of the Jeffreys interval (NaN where n == 0)."""
    if dedupe and n.shape[0] > 64:  # few distinct (n, s) pairs: compute each once
        key = n.astype(np.int64) * (int(n.max()) + 1) + s
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        low, high = jeffreys(n[first], s[first], confidence, dedupe=False)
        return low[inverse], high[inverse]
    betaincinv = ufuncs().betaincinv  # scipy's, without importing scipy.special

    alpha = (1.0 - confidence) / 2
    a = s + 0.5
    b = n - s + 0.5
    with np.errstate(invalid="ignore"):
        low = np.where(s == 0, 0.0, betaincinv(a, b, alpha))
        high = np.where(s == n, 1.0, betaincinv(a, b, 1.0 - alpha))
    empty = n == 0
    low = np.where(empty, np.nan, low)
    high = np.where(empty, np.nan, high)
    return low.astype(np.float64), high.astype(np.float64)


def settled_in_band(
    band: IntArray, low: FloatArray, high: FloatArray, epsilon: float = DEFAULT_EPSILON
) -> BoolArray:
    """Whether each interval lies inside its band (point bands widened by ``epsilon``)."""
    lo_edge = np.array([0.0, *EDGES[:-1], 1.0 - epsilon])
    hi_edge = np.array([epsilon, *EDGES[1:], 1.0])
    safe = np.clip(band, 0, 6)
    with np.errstate(invalid="ignore"):
        inside = (low >= lo_edge[safe]) & (high <= hi_edge[safe])
    return np.asarray(inside & (band >= 0), dtype=np.bool_)


def band_probabilities(post: TaskPosterior, epsilon: float = DEFAULT_EPSILON) -> FloatArray:
    """P(p in each band) per task (tasks × 7), the point bands widened by ``epsilon``: 0 % is p ≤ ε,
    100 % is p ≥ 1 − ε (so they overlap their neighbours; each entry is that band's own probability)."""
    edge = {x: post.cdf(x) for x in (epsilon, *EDGES[1:-1], 1.0 - epsilon)}
    columns = [
        edge[epsilon],
        edge[EDGES[1]] - post.w0,
        edge[EDGES[2]] - edge[EDGES[1]],
        edge[EDGES[3]] - edge[EDGES[2]],
        edge[EDGES[4]] - edge[EDGES[3]],
        1.0 - edge[EDGES[4]] - post.w1,
        1.0 - edge[1.0 - epsilon],
    ]
    return np.asarray(np.clip(np.column_stack(columns), 0.0, 1.0), dtype=np.float64)


PLAUSIBLE_CHECKED = 40
"""At most this many priors of the likelihood-ratio region are checked for "settled" (evenly spaced)."""


def settled_by_posterior(
    band: IntArray,
    n: IntArray,
    s: IntArray,
    prior: GridPrior | Prior,
    epsilon: float = DEFAULT_EPSILON,
    confidence: float = CONFIDENCE,
) -> tuple[FloatArray, BoolArray]:
    """``(P(p in the task's band), settled)`` per task (band -1: NaN, not settled).

    The probability is the task's posterior under ``prior``; "settled" asks it of every prior the data
    cannot rule out as well (:class:`rewardgym.stats.prior.PriorFit`, up to :data:`PLAUSIBLE_CHECKED`):
    a pool prior fitted to a few hundred tasks is itself uncertain, and the posterior of the single best
    fit settled 5–17 % of tasks outside their band in the calibration suite."""
    if band.shape[0] == 0:
        return np.zeros(0, np.float64), np.zeros(0, np.bool_)
    column = np.clip(band, 0, 6)
    # everything once per distinct (n, s, band): few of them, however many tasks
    base = int(n.max(initial=0)) + 1
    _, first, inverse = np.unique((n * base + s) * 7 + column, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    keys = np.stack([n[first], s[first], column[first]], axis=1)
    rows = np.arange(keys.shape[0])
    own = band_probabilities(posterior(keys[:, 0], keys[:, 1], prior), epsilon)[rows, keys[:, 2]]
    probability = np.where(band >= 0, own[inverse], np.nan)
    plausible = prior.fit.plausible if isinstance(prior, GridPrior) else fit_priors(n, s).plausible
    pick = np.unique(
        np.linspace(0, plausible.shape[0] - 1, min(plausible.shape[0], PLAUSIBLE_CHECKED)).astype(int)
    )
    floor = own.copy()
    for never, always, a, b in plausible[pick].tolist():
        table = band_probabilities(posterior(keys[:, 0], keys[:, 1], Prior(never, always, a, b)), epsilon)
        floor = np.minimum(floor, table[rows, keys[:, 2]])
    with np.errstate(invalid="ignore"):
        settled = (floor[inverse] >= confidence) & (band >= 0)
    return np.asarray(probability, dtype=np.float64), np.asarray(settled, dtype=np.bool_)


def task_passes(
    task: IntArray,
    task_starts: IntArray,
    counted: BoolArray,
    passed: BoolArray,
    *,
    epsilon: float = DEFAULT_EPSILON,
    confidence: float = CONFIDENCE,
    estimate: FloatArray | None = None,
    prior: GridPrior | Prior | None = None,
) -> TaskPasses:
    """Everything of section 1 per task (see module doc). ``estimate`` replaces s / n (adaptive runs);
    ``prior`` is the pool's fitted prior (fitted to these counts when not given)."""
    n, s = pass_counts(task_starts, counted, passed)
    return numbers_from_counts(
        task, n, s, epsilon=epsilon, confidence=confidence, estimate=estimate, prior=prior
    )


def numbers_from_counts(
    task: IntArray,
    n: IntArray,
    s: IntArray,
    *,
    epsilon: float = DEFAULT_EPSILON,
    confidence: float = CONFIDENCE,
    estimate: FloatArray | None = None,
    prior: GridPrior | Prior | None = None,
) -> TaskPasses:
    """:func:`task_passes` from per-task counts (profiles and selections have no columns)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.where(n > 0, s / np.maximum(n, 1), np.nan)
    rate = observed if estimate is None else np.where(n > 0, estimate, np.nan)
    low, high = jeffreys(n, s, confidence)
    band = band_of(rate)
    prior = prior if prior is not None else fit_pool_prior(n, s)
    probability, settled = settled_by_posterior(band, n, s, prior, epsilon, confidence)
    return TaskPasses(
        task=task,
        n=n,
        passes=s,
        rate=np.asarray(rate, dtype=np.float64),
        low=low,
        high=high,
        band=band,
        band_probability=probability,
        settled=settled,
        prior=prior,
    )


def band_table(passes: TaskPasses) -> list[tuple[int, int]]:
    """``(tasks, settled tasks)`` per band, lowest band first."""
    table = []
    for band in range(7):
        inside = passes.band == band
        table.append((int(np.count_nonzero(inside)), int(np.count_nonzero(inside & passes.settled))))
    return table


SETTLE_LADDER = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
"""More rollouts :func:`repeats_to_settle` tries (beyond the last: "more than 1,024")."""


def repeats_to_settle(
    n: IntArray,
    s: IntArray,
    prior: GridPrior | Prior,
    epsilon: float = DEFAULT_EPSILON,
    confidence: float = CONFIDENCE,
) -> IntArray:
    """Per task, how many more rollouts would settle it — the first step of :data:`SETTLE_LADDER` at
    which the task, its extra rollouts passing at its posterior mean rate, would be settled by
    :func:`settled_by_posterior` (the rule ``settled`` uses); 0 when it is settled already, -1 when not
    even 1,024 more would. A projection, not a promise: what a user can plan on."""
    out = np.full(n.shape[0], -1, np.int64)
    if n.shape[0] == 0:
        return out
    pairs, inverse = np.unique(np.stack([n, s], axis=1), axis=0, return_inverse=True)
    pn, ps = pairs[:, 0], pairs[:, 1]
    mean = posterior(pn, ps, prior).mean()
    result = np.full(pn.shape[0], -1, np.int64)
    for extra in (0, *SETTLE_LADDER):
        open_ = result < 0
        if not open_.any():
            break
        n2 = pn[open_] + extra
        s2 = ps[open_] + np.rint(extra * mean[open_]).astype(np.int64)
        band = band_of(s2 / np.maximum(n2, 1))
        _, done = settled_by_posterior(band, n2, s2, prior, epsilon, confidence)
        result[np.flatnonzero(open_)[done]] = extra
    out[:] = result[inverse.reshape(-1)]
    return out
