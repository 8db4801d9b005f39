"""Whole-file columns assembled from scanned chunks, and the measured rollout table built from them.

Contract:

- :func:`merge_inputs` / :func:`merge_results` concatenate chunks (in file order) into one
  :class:`InputColumns` / :class:`ResultColumns`: per-row arrays, file line numbers, agent names and run
  keys as indexes into one ``names`` table, field-name tuples (``shapes``) as indexes into one list.
- :func:`measured_table` builds the :class:`RolloutTable` the statistics run on: the given result rows
  (already sorted by key), their metric values as a ``(fields, rows)`` float64 matrix with NaN for an
  absent field, and the fields in first-seen order over those rows (pandas' column order for
  ``DataFrame.from_records`` of the sorted results).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rewardgym.profile.chunks import InputChunk, ResultChunk

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class InputColumns:
    """Every materialized-input row of a file, in file order."""

    task: IntArray
    rollout: IntArray
    line: IntArray
    """1-based line number of each row."""
    offset: IntArray
    """Byte offset of each row's line (position in the list for in-memory rows)."""
    length: IntArray
    """Byte length of each row's line."""
    sample_length: IntArray
    """Leading bytes of the line that, closed by ``}``, are the row's ``sample`` (-1: re-parse)."""
    agent: IntArray
    """Index of ``agent_ref.name`` in ``names`` (-1: none)."""
    run_key: IntArray
    """Index of the run key (``_ng_environment_server`` or agent name) in ``names`` (-1: none)."""
    names: tuple[str, ...]


@dataclass(frozen=True)
class ResultColumns:
    """Every rollout row of a file, in file order."""

    task: IntArray
    rollout: IntArray
    line: IntArray
    masked: BoolArray
    shape: IntArray
    """Index into ``shapes`` of the row's metric field names (-1 for a masked row)."""
    shapes: tuple[tuple[str, ...], ...]
    value_start: IntArray
    """Where the row's metric values start in ``values``."""
    values: FloatArray
    info_start: IntArray
    """Where the row's serialized ``rollout_infos`` record starts in ``infos`` (masked rows: 0)."""
    info_end: IntArray
    """Where it ends (masked rows: 0)."""
    infos: bytearray
    """All records, back to back."""
    with_outcome: int
    """Rows that carry ``response`` or ``reward``."""


def _line_numbers(counts: Sequence[int], sizes: Sequence[int]) -> IntArray:
    parts = []
    first = 1
    for lines, size in zip(counts, sizes, strict=True):
        parts.append(np.arange(first, first + size, dtype=np.int64))
        first += lines
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _remap(local: npt.NDArray[np.int32], table: npt.NDArray[np.int64]) -> IntArray:
    out = np.full(local.shape, -1, dtype=np.int64)
    present = local >= 0
    out[present] = table[local[present]]
    return out


def merge_inputs(chunks: Sequence[InputChunk]) -> InputColumns:
    """One :class:`InputColumns` from the chunks of a file (in file order, without errors)."""
    index: dict[str, int] = {}
    agents, run_keys = [], []
    for chunk in chunks:
        table = np.array([index.setdefault(name, len(index)) for name in chunk.names], dtype=np.int64)
        agents.append(_remap(chunk.agent, table))
        run_keys.append(_remap(chunk.run_key, table))

    def cat(parts: list[IntArray]) -> IntArray:
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    return InputColumns(
        task=cat([c.task for c in chunks]),
        rollout=cat([c.rollout for c in chunks]),
        line=_line_numbers([c.lines for c in chunks], [len(c.task) for c in chunks]),
        offset=cat([c.offset for c in chunks]),
        length=cat([c.length for c in chunks]),
        sample_length=cat([c.sample_length for c in chunks]),
        agent=cat(agents),
        run_key=cat(run_keys),
        names=tuple(index),
    )


def merge_results(chunks: Sequence[ResultChunk]) -> ResultColumns:
    """One :class:`ResultColumns` from the chunks of a file (in file order, without errors)."""
    shape_index: dict[tuple[str, ...], int] = {}
    shape_ids, value_starts, info_starts, info_ends = [], [], [], []
    value_base = 0
    info_base = 0
    infos = bytearray()
    for chunk in chunks:
        table = np.array([shape_index.setdefault(s, len(shape_index)) for s in chunk.shapes], dtype=np.int64)
        shape_ids.append(_remap(chunk.shape, table))
        widths = np.array([len(s) for s in chunk.shapes] or [0], dtype=np.int64)
        measured = chunk.shape >= 0
        row_widths = np.where(measured, widths[np.maximum(chunk.shape, 0)], 0)
        ends = np.cumsum(row_widths)
        value_starts.append(value_base + ends - row_widths)
        value_base += int(ends[-1]) if len(ends) else 0
        starts = np.zeros(len(chunk.shape), dtype=np.int64)
        stops = np.zeros(len(chunk.shape), dtype=np.int64)
        stops[measured] = info_base + chunk.info_ends
        starts[measured] = info_base + np.concatenate(([0], chunk.info_ends[:-1]))
        info_starts.append(starts)
        info_ends.append(stops)
        info_base += len(chunk.infos)
        infos += chunk.infos
        chunk.infos = b""  # the merged buffer owns the records now: keep peak memory at one copy

    def cat(parts: Sequence[npt.NDArray[Any]], dtype: type[np.generic]) -> npt.NDArray[Any]:
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)

    return ResultColumns(
        task=cat([c.task for c in chunks], np.int64),
        rollout=cat([c.rollout for c in chunks], np.int64),
        line=_line_numbers([c.lines for c in chunks], [len(c.task) for c in chunks]),
        masked=cat([c.masked for c in chunks], np.bool_),
        shape=cat(shape_ids, np.int64),
        shapes=tuple(shape_index),
        value_start=cat(value_starts, np.int64),
        values=cat([c.values for c in chunks], np.float64),
        info_start=cat(info_starts, np.int64),
        info_end=cat(info_ends, np.int64),
        infos=infos,
        with_outcome=sum(c.with_outcome for c in chunks),
    )


@dataclass(frozen=True)
class RolloutTable:
    """Measured, matched rollouts in columnar form, in ``(task, rollout)`` order: what statistics run on."""

    fields: tuple[str, ...]
    """Metric columns, in first-seen order over the rows."""
    values: FloatArray
    """``(len(fields), rows)`` values; NaN where a row lacks the field."""
    task: IntArray
    rollout: IntArray
    label: IntArray
    """Index of each row's agent label in ``labels`` (-1: no agent)."""
    labels: tuple[str, ...]

    @property
    def rows(self) -> int:
        return int(self.task.shape[0])


def _first_seen(ids: IntArray, count: int) -> list[int]:
    """The distinct values of ``ids`` (each in ``0..count-1``) in order of first occurrence."""
    if count <= 64:
        found = [
            (int(np.argmax(ids == value)), value) for value in range(count) if bool(np.any(ids == value))
        ]
        return [value for _, value in sorted(found)]
    first = np.full(count, len(ids), dtype=np.int64)
    np.minimum.at(first, ids, np.arange(len(ids), dtype=np.int64))
    present = np.flatnonzero(first < len(ids))
    ordered: list[int] = present[np.argsort(first[present])].tolist()
    return ordered


def measured_table(
    results: ResultColumns, rows: IntArray, label: IntArray, labels: tuple[str, ...]
) -> RolloutTable:
    """The table of result rows ``rows`` (sorted by key, none masked), with each row's label index."""
    shape = results.shape[rows]
    fields: dict[str, int] = {}
    shape_fields: dict[int, list[int]] = {}
    if len(rows):
        for sid in _first_seen(shape, len(results.shapes)):
            shape_fields[sid] = [fields.setdefault(name, len(fields)) for name in results.shapes[sid]]
    values = np.full((len(fields), len(rows)), np.nan)
    starts = results.value_start[rows]
    for sid, columns in shape_fields.items():
        where = np.flatnonzero(shape == sid)
        base = starts[where]
        for position, column in enumerate(columns):
            values[column, where] = results.values[base + position]
    return RolloutTable(
        fields=tuple(fields),
        values=values,
        task=results.task[rows],
        rollout=results.rollout[rows],
        label=label,
        labels=labels,
    )
