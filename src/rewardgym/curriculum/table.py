"""The posterior numbers of a task, tabulated over its (discounted) passes and failures.

Contract: :func:`signal_table(prior, group)` gives, for every pair of quantized counts ``(s, f)``, the
posterior mean and standard deviation of ``q(p) = 1 − p^G − (1 − p)^G`` — the chance that a fresh group
of ``G`` rollouts is *informative* (not all equal) — and the posterior mean of p, under the pool prior of
:mod:`rewardgym.stats.prior` (weights on p = 0, 100 points in between and p = 1). The posterior of a task
with ``s`` passes and ``f`` failures is prior × p^s (1 − p)^f normalised, as in
:mod:`rewardgym.stats.posterior`; here ``s`` and ``f`` are *discounted* counts (real numbers), i.e. a
power likelihood in which an observation ``k`` half-lives old counts ``2^−k`` — the standard exponential
forgetting of a drifting parameter (MoPPS' discounted Beta is the same thing on a Beta prior).

Why a table: a grid posterior per task would cost 102 floats of memory and 102 multiply-adds per task
per query; the table costs two small-integer lookups, so 10^6 tasks stay at a few bytes each and a batch
of 512 is scored in microseconds. Counts are quantized on a square-root scale (:func:`quantize`, 64 steps
up to ~110 rollouts: ±0.06 rollouts near 0, ±0.8 near 16), finer where one rollout moves the posterior
most; beyond 110 discounted rollouts a task's q is known to within the grid's resolution anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rewardgym.stats.arrays import FloatArray
from rewardgym.stats.prior import GridPrior

LEVELS = 64
"""Quantization levels of a count."""
_SCALE = 6.0
"""Levels per unit of sqrt(count): level k stands for (k / 6)² rollouts."""

Float32Array = npt.NDArray[np.float32]
Int32Array = npt.NDArray[np.int32]


def quantize(count: npt.NDArray[np.floating]) -> Int32Array:
    """The table level of each (discounted) count."""
    level = np.rint(np.sqrt(np.maximum(count, 0.0)) * _SCALE)
    return np.asarray(np.minimum(level, LEVELS - 1), dtype=np.int32)


def level_values() -> FloatArray:
    """The count each level stands for."""
    return np.asarray((np.arange(LEVELS) / _SCALE) ** 2, dtype=np.float64)


@dataclass(frozen=True)
class SignalTable:
    """Posterior numbers per quantized (passes, failures); rows are passes, columns failures."""

    group: int
    mean: Float32Array
    """E[P(a group of G is informative)]."""
    sd: Float32Array
    """Its posterior standard deviation (how much more there is to learn about the task)."""
    pass_mean: Float32Array
    """E[p]."""
    support: FloatArray
    weights: FloatArray
    """Posterior weights per (passes level × failures level, support point) — for windows and quotas."""

    def prob_between(self, low: float, high: float) -> Float32Array:
        """P(low ≤ p ≤ high) per cell (the optional difficulty window)."""
        inside = ((self.support >= low) & (self.support <= high)).astype(np.float64)
        return np.asarray((self.weights @ inside).reshape(LEVELS, LEVELS), dtype=np.float32)


def _likelihood(s: FloatArray, f: FloatArray, p: FloatArray) -> FloatArray:
    """p^s (1 − p)^f per row (s, f) and support point, each row scaled by its largest value (the posterior
    is normalised anyway): two outer products and one exp, with 0^0 = 1 at the edges p = 0 and p = 1."""
    inside = (p > 0) & (p < 1)
    log_p = np.log(np.where(inside, p, 0.5))
    log_q = np.log1p(-np.where(inside, p, 0.5))
    exponent = np.outer(s, log_p) + np.outer(f, log_q)
    exponent[:, p == 0] = np.where(s == 0, 0.0, -np.inf)[:, None]
    exponent[:, p == 1] = np.where(f == 0, 0.0, -np.inf)[:, None]
    return np.asarray(np.exp(exponent - exponent.max(axis=1, keepdims=True)), dtype=np.float64)


def signal_table(prior: GridPrior, group: int, drift: float = 0.0) -> SignalTable:
    """The table of ``prior`` for groups of ``group`` rollouts (see module doc); with ``drift``, q is that
    of the *next* group of a task whose pass probability moves by ``drift`` until then (0 and 1 stay)."""
    counts = level_values()
    grid_s, grid_f = np.meshgrid(counts, counts, indexing="ij")
    s, f = grid_s.reshape(-1), grid_f.reshape(-1)
    joint = _likelihood(s, f, prior.support) * prior.weight[None, :]
    total = joint.sum(axis=1, keepdims=True)
    weights = joint / np.where(total > 0, total, 1.0)
    p = prior.support
    ahead = np.where((p > 0) & (p < 1), np.clip(p + drift, 0.0, 1.0), p)
    q = 1.0 - ahead**group - (1.0 - ahead) ** group
    mean = weights @ q
    var = np.maximum(weights @ (q * q) - mean * mean, 0.0)

    def shaped(values: FloatArray) -> Float32Array:
        return np.asarray(values.reshape(LEVELS, LEVELS), dtype=np.float32)

    return SignalTable(group, shaped(mean), shaped(np.sqrt(var)), shaped(weights @ p), p, weights)
