"""Which tasks a selection keeps, and in which order (pure: numpy arrays in, indices out; no I/O).

Contract of :func:`select_indices` — steps in this order, each task dropped at its first failing step
(the reason is recorded):

1. ``unmeasured``: no counted rollout (no pass rate to select on);
2. ``pass_rate``: outside ``[min_pass_rate, max_pass_rate]`` (inclusive, on the point estimate s / n);
3. ``band``: not in one of ``bands``; 4. ``unsettled``: ``settled_only`` and not settled;
5. ``flagged``: ``drop_flagged`` and the task has a task-level health flag (a check about the task as a
   whole: all repeats identical, every rollout cut off, …); ``unhealthy_rollouts``:
   ``drop_unhealthy_rollouts`` and at least one of the task's rollouts got an unhealthy verdict (cut off,
   empty reply, no extracted answer, …) — the rollout-level checks, which no task flag repeats;
6. ``quota``: beyond the first ``quota`` tasks of its ``by`` value; 7. ``stratify`` / ``limit``: not in
   the ``limit``-sized sample (``stratify``: each value of the field gets its share of the remaining
   tasks, by largest remainder);
8. ``schedule``: not drawn by the Gaussian schedule (only when its stages hold fewer rows than tasks).

Which tasks steps 6–7 keep follows the order: the hardest (lowest pass rate) with ``hardest-first``,
the easiest with ``easiest-first``, else a seeded random choice. Ties in pass rate are broken by a seeded
random number per task. Orders and schedules:

- ``original``: the order of the inputs; ``random``: a seeded shuffle; ``hardest-first`` /
  ``easiest-first``: by pass rate;
- ``curriculum``: by pass rate, easiest first, cut into ``stages`` stages of (nearly) equal size, each
  shuffled;
- ``gaussian``: stage k of K draws ``stage_size`` tasks, without replacement, with probability
  proportional to exp(−(p − μ_k)² / 2σ²), μ_k moving linearly from ``mean_start`` (easy: a high pass rate)
  to ``mean_end`` (hard). A task drawn in one stage is not drawn again unless ``replace``. The default
  stage size is ⌈tasks / K⌉, so without ``replace`` every task is drawn once (the last stages take what
  is left). Weighted sampling without replacement is the Gumbel-top-k trick (Efraimidis–Spirakis) in
  log space: the ``stage_size`` smallest of log E + (p − μ_k)² / 2σ², E ~ Exp(1), in that order.

Everything random comes from one ``numpy.random.default_rng(seed)`` consumed in a fixed order, so the
same inputs and options give the same indices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rewardgym.dataset.options import SelectOptions, band_index
from rewardgym.stats.arrays import BoolArray, FloatArray, IntArray

REASONS = (
    "unmeasured",
    "pass_rate",
    "band",
    "unsettled",
    "flagged",
    "unhealthy_rollouts",
    "quota",
    "stratify",
    "limit",
    "schedule",
)


@dataclass(frozen=True)
class Stats:
    """Per-task numbers the selection runs on (one entry per task, in input order)."""

    rate: FloatArray
    band: IntArray
    settled: BoolArray
    flagged: BoolArray
    unhealthy_rollouts: BoolArray | None = None
    """Per task: at least one rollout with an unhealthy verdict (None: not known)."""
    by: IntArray | None = None
    """Group id per task of ``--by`` (None without it)."""
    strata: IntArray | None = None
    """Group id per task of ``--stratify``."""


@dataclass(frozen=True)
class Selection:
    order: IntArray
    """Kept task indices in output order."""
    stage: IntArray | None
    """Stage (0-based) of each output row, with a schedule."""
    dropped: npt.NDArray[np.int8]
    """Per task: -1 kept, else the index in :data:`REASONS` of why it was dropped."""
    stage_means: tuple[float, ...] = ()
    """μ_k of the Gaussian schedule."""


def _ranking(rate: FloatArray, tie: FloatArray, order: str) -> IntArray:
    """Preference order of all tasks: who a quota / limit keeps first (see module doc)."""
    if order == "hardest-first":
        return np.lexsort((tie, rate)).astype(np.int64)
    if order == "easiest-first":
        return np.lexsort((tie, -rate)).astype(np.int64)
    return np.argsort(tie, kind="stable").astype(np.int64)


def _quota(candidates: IntArray, groups: IntArray, quota: int) -> IntArray:
    """The first ``quota`` candidates (in preference order) of each group."""
    seen: dict[int, int] = {}
    keep = []
    for index in candidates.tolist():
        group = int(groups[index])
        if seen.get(group, 0) < quota:
            seen[group] = seen.get(group, 0) + 1
            keep.append(index)
    return np.array(keep, np.int64)


def _stratified(candidates: IntArray, groups: IntArray, limit: int) -> IntArray:
    """``limit`` candidates, each group getting its share by the largest-remainder method."""
    if limit >= candidates.shape[0]:
        return candidates
    ids, first, sizes = np.unique(groups[candidates], return_index=True, return_counts=True)
    exact = sizes * limit / candidates.shape[0]
    share = np.floor(exact).astype(np.int64)
    # Remainders go to the largest fractional parts; equal ones to the group met first.
    extra = np.lexsort((first, -(exact - share)))[: limit - int(share.sum())]
    share[extra] += 1
    allowed = dict(zip(ids.tolist(), share.tolist(), strict=True))
    taken: dict[int, int] = {}
    keep = []
    for index in candidates.tolist():
        group = int(groups[index])
        if taken.get(group, 0) < allowed[group]:
            taken[group] = taken.get(group, 0) + 1
            keep.append(index)
    return np.array(keep, np.int64)


def stage_means(options: SelectOptions) -> tuple[float, ...]:
    k = options.stages
    if k == 1:
        return (options.mean_start,)
    # Interpolated from both ends, so the last stage's mean is mean_end exactly (no rounding drift).
    t = [i / (k - 1) for i in range(k)]
    return tuple(round(options.mean_start * (1 - x) + options.mean_end * x, 12) for x in t)


def _gaussian(
    kept: IntArray, rate: FloatArray, options: SelectOptions, rng: np.random.Generator
) -> tuple[IntArray, IntArray]:
    size = options.stage_size or -(-kept.shape[0] // options.stages)
    available = np.ones(kept.shape[0], np.bool_)
    rows: list[IntArray] = []
    stages: list[IntArray] = []
    p = rate[kept]
    for stage, mean in enumerate(stage_means(options)):
        # Drawn for every task each stage, used or not, so the stream of numbers is fixed.
        score = np.log(rng.exponential(size=kept.shape[0])) + (p - mean) ** 2 / (2 * options.sigma**2)
        score[~available] = np.inf
        take = min(size, int(np.count_nonzero(available)))
        chosen = np.lexsort((np.arange(kept.shape[0]), score))[:take]
        if not options.replace:
            available[chosen] = False
        rows.append(kept[chosen])
        stages.append(np.full(take, stage, np.int64))
    return np.concatenate(rows).astype(np.int64), np.concatenate(stages).astype(np.int64)


def _curriculum(kept: IntArray, rate: FloatArray, tie: FloatArray, stages: int) -> tuple[IntArray, IntArray]:
    easiest = kept[np.lexsort((tie[kept], -rate[kept]))]
    rows = []
    labels = []
    for stage, chunk in enumerate(np.array_split(easiest, stages)):
        rows.append(chunk[np.argsort(tie[chunk], kind="stable")])
        labels.append(np.full(chunk.shape[0], stage, np.int64))
    return np.concatenate(rows).astype(np.int64), np.concatenate(labels).astype(np.int64)


def _filters(stats: Stats, options: SelectOptions) -> npt.NDArray[np.int8]:
    n = stats.rate.shape[0]
    dropped = np.full(n, -1, np.int8)

    def drop(reason: str, mask: BoolArray) -> None:
        dropped[(dropped == -1) & mask] = REASONS.index(reason)

    measured = ~np.isnan(stats.rate)
    drop("unmeasured", ~measured)
    with np.errstate(invalid="ignore"):
        if options.min_pass_rate is not None:
            drop("pass_rate", stats.rate < options.min_pass_rate)
        if options.max_pass_rate is not None:
            drop("pass_rate", stats.rate > options.max_pass_rate)
    if options.bands:
        wanted = np.array([band_index(b) for b in options.bands], np.int64)
        drop("band", ~np.isin(stats.band, wanted))
    if options.settled_only:
        drop("unsettled", ~stats.settled)
    if options.drop_flagged:
        drop("flagged", stats.flagged)
    if options.drop_unhealthy_rollouts and stats.unhealthy_rollouts is not None:
        drop("unhealthy_rollouts", stats.unhealthy_rollouts)
    return dropped


def select_indices(stats: Stats, options: SelectOptions) -> Selection:
    """Filter, cut and order the tasks (see module doc)."""
    rng = np.random.default_rng(options.seed)
    n = stats.rate.shape[0]
    tie: FloatArray = np.asarray(rng.random(size=(n,)), dtype=np.float64)
    dropped = _filters(stats, options)
    ranking = _ranking(stats.rate, tie, options.order)
    candidates = ranking[dropped[ranking] == -1]

    def cut(reason: str, keep: IntArray) -> IntArray:
        gone = np.setdiff1d(candidates, keep)
        dropped[gone] = REASONS.index(reason)
        return keep

    if options.quota is not None and stats.by is not None:
        candidates = cut("quota", _quota(candidates, stats.by, options.quota))
    if options.limit is not None:
        if stats.strata is not None:
            candidates = cut("stratify", _stratified(candidates, stats.strata, options.limit))
        else:
            candidates = cut("limit", candidates[: options.limit])
    kept = np.sort(candidates)  # input order; the arrangement below decides the output order
    stage: IntArray | None = None
    means: tuple[float, ...] = ()
    if options.schedule == "curriculum":
        order, stage = _curriculum(kept, stats.rate, tie, options.stages)
    elif options.schedule == "gaussian":
        means = stage_means(options)
        order, stage = _gaussian(kept, stats.rate, options, rng)
        dropped[np.setdiff1d(kept, order)] = REASONS.index("schedule")
    elif options.order == "original":
        order = kept
    else:
        order = ranking[np.isin(ranking, kept)]
    return Selection(order=order, stage=stage, dropped=dropped, stage_means=means)
