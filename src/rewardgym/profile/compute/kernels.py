"""Columnar statistics kernels, bit-identical to the pandas/numpy reductions NeMo Gym's profiler uses.

Contract:

- :func:`describe_segments` takes a ``(fields, rows)`` float64 matrix (NaN = field absent in that row)
  and contiguous row segments (``starts``, ``lengths``) and returns, per segment and field, the count of
  present values and pandas' ``mean``, ``max``, ``min``, ``median`` and sample ``std`` (ddof = 1), NaN
  where undefined (no value; one value for std). Sums are numpy's pairwise sums over the segment with
  absent values as 0 in place — exactly what ``DataFrame.mean()``/``std()`` compute on a group — and
  the variance is the two-pass ``Σ(mean − x)² / (n − 1)``.
- :func:`series_stats` is the same family for one 1-D array of present values (pandas ``Series``
  reductions after ``dropna``): mean, median, std (0.0 for one value), sem = std / √n, min, max and the
  linear-interpolation quartiles (``numpy.percentile``).

Segments are processed by length class and one field at a time, so temporaries stay at a few times
the size of one column.
"""

from __future__ import annotations

import itertools
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_SORT_UP_TO = 64
"""Longer segments and series get their order statistics from ``np.partition`` instead of a sort."""


@dataclass(frozen=True)
class SegmentStats:
    """Per-segment, per-field statistics; every array has shape ``(segments, fields)``."""

    count: IntArray
    """Number of present (non-NaN) values."""
    mean: FloatArray
    """Arithmetic mean (NaN when count is 0)."""
    max: FloatArray
    """Largest value (NaN when count is 0)."""
    min: FloatArray
    """Smallest value (NaN when count is 0)."""
    median: FloatArray
    """Middle value, or the mean of the two middle values (NaN when count is 0)."""
    std: FloatArray
    """Sample standard deviation, ddof = 1 (NaN when count < 2)."""


def _segment_block(column: FloatArray, starts: IntArray, length: int) -> FloatArray:
    """The rows of each segment of one length as a C-contiguous ``(segments, length)`` matrix."""
    if length == 1:
        block: FloatArray = column[starts][:, None]
        return block
    first = int(starts[0])
    if len(starts) > 1 and bool((np.diff(starts) == length).all()):
        # Back-to-back segments (every task with the same number of rollouts): a view, no gather.
        view: FloatArray = column[first : first + len(starts) * length].reshape(len(starts), length)
        return view
    index = starts[:, None] + np.arange(length, dtype=np.int64)
    gathered: FloatArray = column[index]
    return gathered


def _describe_block(
    block: FloatArray,
) -> tuple[IntArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """count, mean, max, min, median, std along the last axis of a ``(segments, length)`` block."""
    absent = np.isnan(block)
    count = block.shape[1] - absent.sum(axis=1)
    has_absent = bool(absent.any())
    filled = np.where(absent, 0.0, block) if has_absent else block
    # np.sum over a contiguous last axis is numpy's pairwise summation, as pandas' reductions are.
    total = np.sum(filled, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / count
        squares = (mean[:, None] - filled) ** 2
        if has_absent:
            squares[absent] = 0.0
        dof = count - 1
        var = np.sum(squares, axis=1) / np.where(dof > 0, dof, 1)
    std = np.where(dof > 0, np.sqrt(np.where(dof > 0, var, 0.0)), np.nan)
    mean = np.where(count > 0, mean, np.nan)
    low, high, smallest, largest = _order_statistics(block, count)
    even = count % 2 == 0
    median = np.where(even, (np.add(0.0, low) + high) / 2, low)
    median = np.where(count > 0, median, np.nan)
    smallest = np.where(count > 0, smallest, np.nan)
    largest = np.where(count > 0, largest, np.nan)
    return count.astype(np.int64), mean, largest, smallest, median, std


def _order_statistics(
    block: FloatArray, count: IntArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Per row of a ``(segments, length)`` block with ``count`` present values each (NaN = absent): the
    lower and upper middle values, the smallest and the largest (undefined where count is 0).

    Short segments (many of them) are sorted row-wise at once; long ones (few) are selected with
    ``np.partition`` on their present values, which finds the same values without a full sort."""
    segments, length = block.shape
    if length <= _SORT_UP_TO:
        ordered = np.sort(block, axis=1)  # NaN sorts last
        rows = np.arange(segments)
        low = ordered[rows, np.maximum(count - 1, 0) // 2]
        high = ordered[rows, np.minimum(count // 2, length - 1)]
        return low, high, ordered[:, 0], ordered[rows, np.maximum(count - 1, 0)]
    out = np.full((4, segments), np.nan)
    for row, present in enumerate(count.tolist()):
        if present == 0:
            continue
        values = block[row]
        if present < length:
            values = values[~np.isnan(values)]
        middle = sorted({(present - 1) // 2, present // 2, 0, present - 1})
        part = np.partition(values, middle)
        out[:, row] = part[(present - 1) // 2], part[present // 2], part[0], part[present - 1]
    return out[0], out[1], out[2], out[3]


def describe_segments(
    values: FloatArray, starts: IntArray, lengths: IntArray, threads: int = 1
) -> SegmentStats:
    """pandas ``describe``-style statistics of each contiguous row segment, for every field; with
    ``threads > 1`` the fields are shared among that many threads (numpy releases the GIL in its loops,
    and each field is computed alone, so the digits are the same)."""
    n_fields = values.shape[0]
    n_segments = len(starts)
    shape = (n_segments, n_fields)
    out = SegmentStats(
        np.zeros(shape, dtype=np.int64),
        np.full(shape, np.nan),
        np.full(shape, np.nan),
        np.full(shape, np.nan),
        np.full(shape, np.nan),
        np.full(shape, np.nan),
    )
    if n_segments == 0 or n_fields == 0:
        return out
    members = np.argsort(lengths, kind="stable")
    ordered = lengths[members]
    cuts = np.concatenate(([0], np.flatnonzero(ordered[1:] != ordered[:-1]) + 1, [len(ordered)])).tolist()
    classes = [(members[a:b], int(ordered[a])) for a, b in itertools.pairwise(cuts)]

    def describe(fields: range) -> None:
        for segs, length in classes:
            seg_starts = starts[segs]
            for field in fields:
                c, m, hi, lo, med, sd = _describe_block(_segment_block(values[field], seg_starts, length))
                out.count[segs, field] = c
                out.mean[segs, field] = m
                out.max[segs, field] = hi
                out.min[segs, field] = lo
                out.median[segs, field] = med
                out.std[segs, field] = sd

    threads = max(1, min(threads, n_fields))
    if threads == 1:
        describe(range(n_fields))
    else:  # leaving the block joins every thread (the profiler forks processes afterwards)
        with ThreadPoolExecutor(threads, thread_name_prefix="profile-numpy") as pool:
            list(pool.map(describe, [range(i, n_fields, threads) for i in range(threads)]))
    return out


@dataclass(frozen=True)
class SeriesStats:
    """Statistics of one series of present values (pandas ``Series`` semantics after ``dropna``)."""

    n: int
    """Number of values."""
    mean: float
    """Arithmetic mean."""
    median: float
    """Middle value or mean of the two middle values."""
    std: float
    """Sample standard deviation (ddof = 1); 0.0 when n == 1."""
    sem: float
    """std / √n."""
    min: float
    """Smallest value."""
    max: float
    """Largest value."""
    p25: float
    """25th percentile, linear interpolation."""
    p75: float
    """75th percentile, linear interpolation."""


def linear_quantile(ordered: FloatArray, q: float) -> float:
    """``numpy.percentile(x, 100 * q)``, linear method (same digits), of a NaN-free array that holds, at
    positions ``⌊(n − 1)q⌋``, the next one and ``n − 1``, the values a sort would put there (a sorted
    array, or one partitioned at those positions)."""
    n = int(ordered.shape[0])
    virtual = (n - 1) * q
    if virtual >= n - 1:
        return float(ordered[-1])
    previous = math.floor(virtual)
    gamma = virtual - previous
    low = float(ordered[previous])
    high = float(ordered[previous + 1])
    difference = high - low
    if gamma >= 0.5:
        return high - difference * (1 - gamma)
    return low + difference * gamma


def series_stats(values: FloatArray) -> SeriesStats:
    """Statistics of a non-empty 1-D array without NaN."""
    x = np.ascontiguousarray(values, dtype=np.float64)
    n = int(x.shape[0])
    if n == 0:
        raise ValueError("series_stats needs at least one value")
    mean = float(np.sum(x)) / n
    if n > 1:
        var = float(np.sum((mean - x) ** 2)) / (n - 1)
        std = float(np.sqrt(var))
    else:
        std = 0.0
    middle = n // 2
    needed = {0, n - 1, middle, max(middle - 1, 0)}
    for q in (0.25, 0.75):
        previous = math.floor((n - 1) * q)
        needed.update((previous, min(previous + 1, n - 1)))
    # The order statistics that the median and the quartiles read, without a full sort.
    ordered = np.partition(x, sorted(needed)) if n > _SORT_UP_TO else np.sort(x)
    median = (
        float(ordered[middle]) if n % 2 else (0.0 + float(ordered[middle - 1]) + float(ordered[middle])) / 2
    )
    p25 = linear_quantile(ordered, 0.25)
    p75 = linear_quantile(ordered, 0.75)
    return SeriesStats(
        n=n,
        mean=mean,
        median=median,
        std=std,
        sem=std / n**0.5,
        min=float(ordered[0]),
        max=float(ordered[-1]),
        p25=p25,
        p75=p75,
    )
