"""The statistics layer: a pure function from the measured rollout table to every profile statistic.

Contract: :func:`compute_statistics(table, fan_out)` returns a :class:`ProfileStatistics` holding (its
per-task part alone: :func:`task_statistics`, a :class:`TaskStatistics`)

- ``tasks``: one group per task index (per (task, label) with ``fan_out``; rows without a label then
  belong to no group), ordered by task then label, with NeMo Gym's ``describe`` statistics — mean, max,
  min, median, sample std — per field; the std quirk applied (when every std of a group is undefined,
  the fields present in all of its rows get std 0);
- ``agents``: the same statistics pooled per agent label (rows without a label excluded), by label;
- ``repeat_level`` and ``across_repeats``: NeMo Gym 0.7.0's per-(label, rollout index) entries and the
  across-repeat aggregates per label.

Everything is columnar (numpy arrays of shape ``(groups, fields)``) so later features — per-task
uncertainty, difficulty bands, curricula, checkpoint comparison — can use it without re-reading files.
:func:`stat_items` turns one group into NeMo Gym's ``"<stat>/<field>"`` keys (stat-major, NaN left out).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rewardgym.profile.compute.kernels import SegmentStats, describe_segments
from rewardgym.profile.compute.repeats import across_repeat_metrics, repeat_level_metrics
from rewardgym.profile.read.columns import RolloutTable

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

STATS = ("mean", "max", "min", "median", "std")
"""NeMo Gym's base statistics, in output order."""


@dataclass(frozen=True)
class Groups:
    """Row groups of the table and their statistics."""

    rows: IntArray
    """Table row indices, group after group; each group's rows in table order."""
    starts: IntArray
    """Where each group starts in ``rows``."""
    lengths: IntArray
    """Rows per group."""
    stats: SegmentStats
    """Per group and field (std quirk applied)."""

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    def members(self, group: int) -> IntArray:
        """The table rows of one group."""
        start = int(self.starts[group])
        return self.rows[start : start + int(self.lengths[group])]


@dataclass(frozen=True)
class ProfileStatistics:
    """Every statistic of a profile (see module doc)."""

    table: RolloutTable
    fan_out: bool
    """Whether per-task groups are per (task, label)."""
    tasks: Groups
    task_of_group: IntArray
    """Task index of each task group."""
    label_of_group: IntArray
    """Label index of each task group (-1 unless ``fan_out``)."""
    agents: Groups
    agent_of_group: IntArray
    """Label index of each agent group."""
    repeat_level: list[dict[str, Any]]
    across_repeats: dict[str, dict[str, float]]

    @property
    def fields(self) -> tuple[str, ...]:
        return self.table.fields


def _segments(sorted_keys: IntArray) -> tuple[IntArray, IntArray]:
    if len(sorted_keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.concatenate(([0], np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1)).astype(np.int64)
    lengths = np.diff(np.append(starts, len(sorted_keys))).astype(np.int64)
    return starts, lengths


def _grouped(
    table: RolloutTable, rows: IntArray, starts: IntArray, lengths: IntArray, threads: int = 1
) -> Groups:
    values = table.values if len(rows) == table.rows and np.array_equal(rows, np.arange(table.rows)) else None
    if values is None:
        values = np.ascontiguousarray(table.values[:, rows])
    stats = describe_segments(values, starts, lengths, threads)
    # NeMo Gym: when a group's std is undefined for every field (e.g. one rollout), the fields with a
    # value in every row of the group get std 0 instead.
    all_undefined = np.asarray(np.isnan(stats.std).all(axis=1), dtype=np.bool_)
    fill = all_undefined[:, None] & (stats.count == lengths[:, None])
    stats.std[fill] = 0.0
    return Groups(rows=rows, starts=starts, lengths=lengths, stats=stats)


@dataclass(frozen=True)
class TaskStatistics:
    """The per-task part of :class:`ProfileStatistics` (what the per-task lines need)."""

    table: RolloutTable
    fan_out: bool
    tasks: Groups
    task_of_group: IntArray
    label_of_group: IntArray

    @property
    def fields(self) -> tuple[str, ...]:
        return self.table.fields


def task_statistics(table: RolloutTable, fan_out: bool, threads: int = 1) -> TaskStatistics:
    """The task groups of the measured table and their statistics (see module doc), computed by
    ``threads`` threads."""
    if fan_out:
        keep = np.flatnonzero(table.label >= 0)
        rows = keep[np.lexsort((table.label[keep], table.task[keep]))].astype(np.int64)
        combined = np.stack([table.task[rows], table.label[rows]])
        change = (
            np.flatnonzero((combined[:, 1:] != combined[:, :-1]).any(axis=0)) + 1
            if len(rows)
            else np.zeros(0, np.int64)
        )
        starts = np.concatenate(([0], change)).astype(np.int64) if len(rows) else np.zeros(0, np.int64)
        lengths = np.diff(np.append(starts, len(rows))).astype(np.int64)
        label_of_group = table.label[rows[starts]]
    else:
        rows = np.arange(table.rows, dtype=np.int64)
        starts, lengths = _segments(table.task)
        label_of_group = np.full(len(starts), -1, dtype=np.int64)
    tasks = _grouped(table, rows, starts, lengths, threads)
    task_of_group = table.task[rows[starts]] if len(rows) else np.zeros(0, np.int64)
    return TaskStatistics(table, fan_out, tasks, task_of_group, label_of_group)


def compute_statistics(
    table: RolloutTable, fan_out: bool, tasks: TaskStatistics | None = None
) -> ProfileStatistics:
    """All statistics of the measured table (see module doc); ``tasks``: its task part, if computed."""
    if tasks is None:
        tasks = task_statistics(table, fan_out)
    labelled = np.flatnonzero(table.label >= 0)
    agent_rows = labelled[np.argsort(table.label[labelled], kind="stable")].astype(np.int64)
    agent_starts, agent_lengths = _segments(table.label[agent_rows])
    agents = _grouped(table, agent_rows, agent_starts, agent_lengths)
    agent_of_group = table.label[agent_rows[agent_starts]] if len(agent_rows) else np.zeros(0, np.int64)

    repeat_level = repeat_level_metrics(table)
    return ProfileStatistics(
        table=table,
        fan_out=fan_out,
        tasks=tasks.tasks,
        task_of_group=tasks.task_of_group,
        label_of_group=tasks.label_of_group,
        agents=agents,
        agent_of_group=agent_of_group,
        repeat_level=repeat_level,
        across_repeats=across_repeat_metrics(repeat_level),
    )


def stat_keys(fields: tuple[str, ...]) -> list[str]:
    """``"<stat>/<field>"`` keys in NeMo Gym's stat-major order."""
    return [f"{stat}/{field}" for stat in STATS for field in fields]


def stat_matrix(stats: SegmentStats, first: int = 0, stop: int | None = None) -> FloatArray:
    """``(groups, 5 × fields)`` values in :func:`stat_keys` order (NaN = leave the key out), for groups
    ``[first, stop)``."""
    parts = (stats.mean, stats.max, stats.min, stats.median, stats.std)
    return np.concatenate([part[first:stop] for part in parts], axis=1)


def stat_items(keys: list[str], matrix: FloatArray) -> Iterator[dict[str, float]]:
    """One ``{key: value}`` dict per group, NaN values left out, values as Python floats."""
    if matrix.shape[1] == 0:
        for _ in range(matrix.shape[0]):
            yield {}
        return
    has_nan = [bool(v) for v in np.asarray(np.isnan(matrix).any(axis=1)).tolist()]
    for row, nan in zip(matrix.tolist(), has_nan, strict=True):
        if nan:
            yield {k: v for k, v in zip(keys, row, strict=True) if not math.isnan(v)}
        else:
            yield dict(zip(keys, row, strict=True))
