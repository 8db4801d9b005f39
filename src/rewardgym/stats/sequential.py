"""Unbiased per-task pass rates for runs whose repeats were chosen by the data (``--adaptive``).

Why: an adaptive run stops a task at its first pass-and-fail, so s / n is pulled toward ½ (+7 to +10
points for p < 0.2, −6 to −9 for p > 0.8) and every mean, filter and comparison built on it inherits the
bias. The posterior under the fitted prior is not touched by the stopping rule, but its per-task mean is
shrunk toward the pool (biased for every single p). What is unbiased for every p is the Rao–Blackwell
estimate: the first counted rollout's reward X₁ is unbiased, and E[X₁ | the task's blocks, n, s] — the
share of the outcome sequences that the run's own rule would have let reach the observed (n, s) and that
start with a pass — keeps that while using all of the task's rollouts (it is what the data can say once
the bias is gone; for a fixed design it is exactly s / n).

Contract:

- A task's rollouts come in **blocks**: block 0 is the first round (rollout indices below ``initial``),
  block k ≥ 1 holds indices ``initial + (k − 1)·step`` … ``initial + k·step − 1`` (the collector appends
  ``step`` per round, fewer at the cap or budget). :class:`Blocks` holds the counted rollouts and passes
  of each task per block; :func:`blocks_from_rollouts` builds it from (task, rollout index, counted,
  passed) columns.
- The rule is replayed from the data: after round k the collector saw, for every task, the rollouts of
  its blocks 0 … k, fitted the prior and settled tasks (:func:`rewardgym.stats.adaptive.unsettled`).
  :func:`replay_fits` refits those priors; :func:`stopped_at` tells for a hypothetical (n, s) after round
  k whether the rule would have stopped there.
- :func:`rao_blackwell` counts, per distinct (block sizes, s), the sequences that pass each earlier
  check without stopping and end at (n, s), and among them those whose first counted rollout passed. A
  task whose (n, s) no continuing sequence reaches (the rule changed under it, e.g. a budget) falls back
  to its first block's mean — still unbiased.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rewardgym.stats.adaptive import AdaptivePolicy, unsettled
from rewardgym.stats.arrays import BoolArray, FloatArray, IntArray
from rewardgym.stats.prior import PriorFit, fit_priors


@dataclass(frozen=True)
class Blocks:
    """Counted rollouts ``m`` and passes ``x`` per task (rows) and block (columns), and each task's number
    of blocks with rows (``blocks``: the rounds it took part in)."""

    m: IntArray
    x: IntArray
    blocks: IntArray

    @property
    def n(self) -> IntArray:
        return np.asarray(self.m.sum(axis=1), dtype=np.int64)

    @property
    def s(self) -> IntArray:
        return np.asarray(self.x.sum(axis=1), dtype=np.int64)

    def through(self, k: int) -> tuple[IntArray, IntArray]:
        """``(n, s)`` per task counting blocks 0 … k only (what the collector saw after round k)."""
        return (
            np.asarray(self.m[:, : k + 1].sum(axis=1), dtype=np.int64),
            np.asarray(self.x[:, : k + 1].sum(axis=1), dtype=np.int64),
        )


def block_of(rollout: IntArray, initial: int, step: int) -> IntArray:
    """The round (block) each rollout index was materialized in."""
    later = (rollout - initial) // max(step, 1) + 1
    return np.asarray(np.where(rollout < initial, 0, later), dtype=np.int64)


def blocks_from_rollouts(
    task_pos: IntArray,
    tasks: int,
    rollout: IntArray,
    counted: BoolArray,
    passed: BoolArray,
    policy: AdaptivePolicy,
) -> Blocks:
    """:class:`Blocks` of ``tasks`` tasks from per-rollout columns (``task_pos``: 0 … tasks − 1)."""
    block = block_of(rollout, policy.initial, policy.round_step)
    width = int(block.max(initial=0)) + 1
    m = np.zeros((tasks, width), np.int64)
    x = np.zeros((tasks, width), np.int64)
    np.add.at(m, (task_pos[counted], block[counted]), 1)
    np.add.at(x, (task_pos[counted & passed], block[counted & passed]), 1)
    present = np.zeros((tasks, width), np.bool_)
    present[task_pos, block] = True
    last = np.where(present.any(axis=1), width - np.argmax(present[:, ::-1], axis=1), 0)
    return Blocks(m, x, np.asarray(last, dtype=np.int64))


def replay_fits(blocks: Blocks, policy: AdaptivePolicy) -> list[PriorFit | None]:
    """The prior the rule used after each round (None for the boundary rule, which has none)."""
    if policy.boundary is not None:
        return [None] * blocks.m.shape[1]
    fits: list[PriorFit | None] = []
    for k in range(blocks.m.shape[1]):
        n, s = blocks.through(k)
        fits.append(fit_priors(n, s))
    return fits


def stopped_at(n: int, s: IntArray, policy: AdaptivePolicy, fit: PriorFit | None) -> BoolArray:
    """For states (n, s) after a round: would the rule have settled them (no more rollouts)?"""
    count = np.full(s.shape[0], n, np.int64)
    return np.asarray(~unsettled(count, s, policy, fit), dtype=np.bool_)


def _estimate(
    sizes: tuple[int, ...], s: int, policy: AdaptivePolicy, fits: list[PriorFit | None]
) -> float | None:
    """E[first counted rollout | block sizes, s] under the rule (None when no sequence reaches s)."""
    n_total = sum(sizes)
    total = np.zeros(n_total + 1)  # paths per pass count so far
    first_pass = np.zeros(n_total + 1)  # of which the first counted rollout passed
    total[0] = 1.0
    seen = 0
    started = False
    for k, m in enumerate(sizes):
        if m:
            choose = np.array([math.comb(m, j) for j in range(m + 1)], np.float64)
            new_total = np.convolve(total[: seen + 1], choose)
            if not started:
                # the first counted rollout is this block's first: passes-with-it are C(m − 1, j − 1)
                lead = np.array([0.0] + [math.comb(m - 1, j - 1) for j in range(1, m + 1)])
                new_first = np.convolve(total[: seen + 1], lead)
                started = True
            else:
                new_first = np.convolve(first_pass[: seen + 1], choose)
            seen += m
            total[: seen + 1] = new_total
            first_pass[: seen + 1] = new_first
        if k < len(sizes) - 1 and seen:
            states = np.arange(seen + 1)
            stop = stopped_at(seen, states, policy, fits[k])
            total[: seen + 1][stop] = 0.0
            first_pass[: seen + 1][stop] = 0.0
    if total[s] <= 0:
        return None
    return float(first_pass[s] / total[s])


def rao_blackwell(
    blocks: Blocks, policy: AdaptivePolicy, fits: list[PriorFit | None] | None = None
) -> FloatArray:
    """Unbiased pass-rate estimate per task (NaN without counted rollouts; see module doc)."""
    fits = replay_fits(blocks, policy) if fits is None else fits
    n, s = blocks.n, blocks.s
    out = np.full(n.shape[0], np.nan)
    rows = np.concatenate([blocks.m, blocks.blocks[:, None], s[:, None]], axis=1)
    unique, inverse = np.unique(rows, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    values = np.full(unique.shape[0], np.nan)
    for u, row in enumerate(unique.tolist()):
        count_blocks, passes = row[-2], row[-1]
        sizes = tuple(row[:count_blocks])
        if sum(sizes) == 0:
            continue
        value = _estimate(sizes, passes, policy, fits)
        values[u] = value if value is not None else np.nan
    out = values[inverse]
    # No continuing sequence reaches the observed counts: the first block's mean is unbiased too.
    missing = np.isnan(out) & (n > 0)
    if missing.any():
        first = np.argmax(blocks.m > 0, axis=1)
        rows_ = np.arange(n.shape[0])
        out[missing] = (blocks.x[rows_, first] / np.maximum(blocks.m[rows_, first], 1))[missing]
    return np.asarray(out, dtype=np.float64)
