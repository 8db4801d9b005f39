"""Whole-file columns assembled from scanned chunks, and the measured rollout table built from them.

Contract:

- :class:`InputMerger` / :class:`ResultMerger` (and :func:`merge_inputs` / :func:`merge_results` on a
  list) fold chunks (in file order, one at a time as they arrive) into one :class:`InputColumns` /
  :class:`ResultColumns`: per-row arrays, file line numbers, agent names and run
  keys as indexes into one ``names`` table, field-name tuples (``shapes``) as indexes into one list.
- :func:`measured_table` builds the :class:`RolloutTable` the statistics run on: the given result rows
  (already sorted by key), their metric values as a ``(fields, rows)`` float64 matrix with NaN for an
  absent field, and the fields in first-seen order over those rows (pandas' column order for
  ``DataFrame.from_records`` of the sorted results).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rewardgym.profile.read.chunks import InputChunk, ResultChunk

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
    extras: tuple[Any, ...] = ()
    """Each chunk's :attr:`~rewardgym.profile.read.chunks.ResultChunk.extra`, in file order (a row hook's)."""


def _remap(local: npt.NDArray[np.int32], table: npt.NDArray[np.int64]) -> IntArray:
    out = np.full(local.shape, -1, dtype=np.int64)
    present = local >= 0
    out[present] = table[local[present]]
    return out


class _Column:
    """A column that chunks are appended to in place: room for the expected total up front, then growth
    by half — so merging copies each chunk once, as it arrives, and the merged column is a view."""

    def __init__(self, dtype: type[np.generic]) -> None:
        self._data: npt.NDArray[Any] = np.zeros(0, dtype)
        self.size = 0

    def reserve(self, total: int) -> None:
        if total > len(self._data):
            grown = np.empty(total, self._data.dtype)
            grown[: self.size] = self._data[: self.size]
            self._data = grown

    def append(self, part: npt.NDArray[Any]) -> None:
        end = self.size + len(part)
        if end > len(self._data):
            self.reserve(max(end, len(self._data) * 3 // 2))
        self._data[self.size : end] = part
        self.size = end

    def array(self) -> npt.NDArray[Any]:
        return self._data[: self.size]


class _Merger:
    """Line numbers and sizing shared by both mergers."""

    def __init__(self, total_bytes: int, columns: dict[str, type[np.generic]]) -> None:
        self.total_bytes = total_bytes
        self.columns = {name: _Column(dtype) for name, dtype in columns.items()}
        self.line = _Column(np.int64)
        self.lines = 0
        """Lines of the chunks added so far."""

    def expect(self, rows: int, span: int) -> float:
        """On the first chunk, room for the whole file (its rows per byte times the file's bytes)."""
        if self.line.size or self.lines or not (0 < span <= self.total_bytes) or not rows:
            return 0.0
        scale = 1.02 * self.total_bytes / span
        for column in (*self.columns.values(), self.line):
            column.reserve(int(rows * scale) + 1024)
        return scale

    def add_rows(self, chunk: InputChunk | ResultChunk) -> None:
        rows = len(chunk.task)
        self.line.append(np.arange(self.lines + 1, self.lines + 1 + rows, dtype=np.int64))
        self.lines += chunk.lines

    @property
    def rows(self) -> int:
        return self.line.size


class InputMerger(_Merger):
    """Folds the chunks of an inputs file, in file order and without errors, into :class:`InputColumns`
    (chunk by chunk, as they arrive: a reader merges while other chunks are still being read).
    ``total_bytes`` and each chunk's ``span`` (bytes) size the columns from the first chunk."""

    def __init__(self, total_bytes: int = 0) -> None:
        names = ("task", "rollout", "offset", "length", "sample_length", "agent", "run_key")
        super().__init__(total_bytes, dict.fromkeys(names, np.int64))
        self._index: dict[str, int] = {}

    def add(self, chunk: InputChunk, span: int = 0) -> None:
        self.expect(len(chunk.task), span)
        index = self._index
        table = np.array([index.setdefault(name, len(index)) for name in chunk.names], dtype=np.int64)
        c = self.columns
        c["task"].append(chunk.task)
        c["rollout"].append(chunk.rollout)
        c["offset"].append(chunk.offset)
        c["length"].append(chunk.length)
        c["sample_length"].append(chunk.sample_length)
        c["agent"].append(_remap(chunk.agent, table))
        c["run_key"].append(_remap(chunk.run_key, table))
        self.add_rows(chunk)

    def result(self) -> InputColumns:
        c = {name: column.array() for name, column in self.columns.items()}
        return InputColumns(line=self.line.array(), names=tuple(self._index), **c)


class ResultMerger(_Merger):
    """Folds the chunks of a rollouts file, in file order and without errors, into :class:`ResultColumns`
    (chunk by chunk, like :class:`InputMerger`)."""

    def __init__(self, total_bytes: int = 0) -> None:
        names = ("task", "rollout", "shape", "value_start", "info_start", "info_end")
        super().__init__(total_bytes, {**dict.fromkeys(names, np.int64), "masked": np.bool_})
        self._values = _Column(np.float64)
        self._shape_index: dict[tuple[str, ...], int] = {}
        self._infos = bytearray()
        self._infos_size = 0
        self.with_outcome = 0
        """Rows with ``response`` or ``reward`` so far."""
        self._extras: list[Any] = []

    def add(self, chunk: ResultChunk, span: int = 0) -> None:
        scale = self.expect(len(chunk.task), span)
        if scale:
            self._values.reserve(int(len(chunk.values) * scale) + 1024)
            self._infos = bytearray(int(len(chunk.infos) * scale) + (1 << 16))
        shape_index = self._shape_index
        table = np.array([shape_index.setdefault(s, len(shape_index)) for s in chunk.shapes], dtype=np.int64)
        widths = np.array([len(s) for s in chunk.shapes] or [0], dtype=np.int64)
        measured = chunk.shape >= 0
        row_widths = np.where(measured, widths[np.maximum(chunk.shape, 0)], 0)
        ends = self._values.size + np.cumsum(row_widths)
        starts = np.zeros(len(chunk.shape), dtype=np.int64)
        stops = np.zeros(len(chunk.shape), dtype=np.int64)
        base = self._infos_size
        starts[measured] = base + chunk.info_start
        stops[measured] = base + chunk.info_end
        c = self.columns
        c["task"].append(chunk.task)
        c["rollout"].append(chunk.rollout)
        c["masked"].append(chunk.masked)
        c["shape"].append(_remap(chunk.shape, table))
        c["value_start"].append(ends - row_widths)
        c["info_start"].append(starts)
        c["info_end"].append(stops)
        self._values.append(chunk.values)
        end = base + len(chunk.infos)
        if end > len(self._infos):
            self._infos.extend(bytes(max(end, len(self._infos) * 3 // 2) - len(self._infos)))
        self._infos[base:end] = chunk.infos
        self._infos_size = end
        self.with_outcome += chunk.with_outcome
        if chunk.extra is not None:
            self._extras.append(chunk.extra)
        self.add_rows(chunk)

    def result(self) -> ResultColumns:
        c = {name: column.array() for name, column in self.columns.items()}
        return ResultColumns(
            line=self.line.array(),
            shapes=tuple(self._shape_index),
            values=self._values.array(),
            infos=self._infos,  # records end at ``info_end``; the room after the last one is unused
            with_outcome=self.with_outcome,
            extras=tuple(self._extras),
            **c,
        )


def merge_inputs(chunks: Sequence[InputChunk]) -> InputColumns:
    """One :class:`InputColumns` from the chunks of a file (in file order, without errors)."""
    merger = InputMerger()
    for chunk in chunks:
        merger.add(chunk)
    return merger.result()


def merge_results(chunks: Sequence[ResultChunk]) -> ResultColumns:
    """One :class:`ResultColumns` from the chunks of a file (in file order, without errors)."""
    merger = ResultMerger()
    for chunk in chunks:
        merger.add(chunk)
    return merger.result()


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
    results: ResultColumns, rows: IntArray, label: IntArray, labels: tuple[str, ...], threads: int = 1
) -> RolloutTable:
    """The table of result rows ``rows`` (sorted by key, none masked), with each row's label index (the
    values gathered by ``threads`` threads)."""
    shape = results.shape[rows]
    fields: dict[str, int] = {}
    shape_fields: dict[int, list[int]] = {}
    if len(rows):
        for sid in _first_seen(shape, len(results.shapes)):
            shape_fields[sid] = [fields.setdefault(name, len(fields)) for name in results.shapes[sid]]
    starts = results.value_start[rows]
    only = next(iter(shape_fields.values())) if len(shape_fields) == 1 else None
    if only is not None and only == list(range(len(fields))):
        # One shape for every row (the usual case): row-wise gathers (a row's values are adjacent, so
        # each row costs one memory access), no NaN to fill.
        values = np.empty((len(fields), len(rows)))
        offsets = np.arange(len(only))

        def gather(first: int, stop: int) -> None:
            values[:, first:stop] = results.values[starts[first:stop, None] + offsets].T

        threads = max(1, threads)
        if threads == 1:
            gather(0, len(rows))
        else:  # numpy releases the GIL in its gathers; leaving the block joins every thread (forks follow)
            bounds = [len(rows) * i // threads for i in range(threads + 1)]
            with ThreadPoolExecutor(threads, thread_name_prefix="profile-numpy") as pool:
                list(pool.map(gather, bounds[:-1], bounds[1:]))
    else:
        values = np.full((len(fields), len(rows)), np.nan)
        for sid, columns in shape_fields.items():
            where = np.flatnonzero(shape == sid)
            # Row-wise: the values of a row are adjacent, so each row costs one memory access.
            block = results.values[starts[where][:, None] + np.arange(len(columns))]
            values[np.array(columns, dtype=np.int64)[:, None], where] = block.T
    return RolloutTable(
        fields=tuple(fields),
        values=values,
        task=results.task[rows],
        rollout=results.rollout[rows],
        label=label,
        labels=labels,
    )
