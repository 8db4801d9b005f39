"""The lines of ``<stem>_reward_profiling.jsonl``, produced a block of task groups at a time.

Contract of :func:`task_block(profile, results, samples, first, stop)`: the per-task lines of task groups
``[first, stop)``, each a compact JSON object ending with a newline, exactly as ``orjson.dumps`` writes
the row — keys ``_ng_task_index``, the ``<stat>/<field>`` keys (stat-major, a NaN statistic left out),
``agent_ref`` (fan-out only), ``sample``, ``num_rollouts``, ``expected_num_rollouts``,
``missing_num_rollouts``, ``reward_profile_completion_pct``, ``rollout_infos``.

How: every line is the same sequence of *slots* (constant key text, then a value), so a block is one flat
list — constant slots filled with list repetition, value slots with columns formatted in bulk (one
``orjson.dumps`` per numeric column, split at the commas) — joined once. No Python code runs per value;
per task only its ``sample`` and ``rollout_infos`` are sliced out of the buffers that hold them (as
``memoryview`` slices: the bytes are copied once, by the join).

:class:`FileSamples` reads the ``sample`` rows of a block from the materialized-input file with
``os.pread`` (no shared file offset, so forked processes may share it), the rows of a block in one read
when they lie close together; :class:`RowSamples` serializes in-memory rows.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import orjson

from rewardgym.profile.compute.profiler import TaskProfile
from rewardgym.profile.compute.statistics import stat_keys, stat_matrix
from rewardgym.profile.read.columns import InputColumns, ResultColumns
from rewardgym.protocol.keys import ROLLOUT_INDEX, TASK_INDEX

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Piece = bytes | memoryview

_NUMPY = orjson.OPT_SERIALIZE_NUMPY
_SPREAD = 4
"""A block's samples are read in one piece when it is at most this many times their total size."""


class Samples(Protocol):
    """The ``sample`` of input rows: per row its JSON without the closing brace, and that brace."""

    def __call__(self, rows: IntArray) -> tuple[list[Piece], list[bytes]]: ...


def _sample_of(row: dict[str, Any]) -> bytes:
    sample = dict(row)
    sample.pop(TASK_INDEX, None)
    sample.pop(ROLLOUT_INDEX, None)
    return orjson.dumps(sample)


class FileSamples:
    """``sample`` rows read from the materialized-input file (see module doc)."""

    def __init__(self, path: Path, inputs: InputColumns) -> None:
        self._fd = os.open(path, os.O_RDONLY)
        self._offset = inputs.offset
        self._length = inputs.length
        self._keep = inputs.sample_length

    def __call__(self, rows: IntArray) -> tuple[list[Piece], list[bytes]]:
        if len(rows) == 0:
            return [], []
        offsets, lengths, keeps = self._offset[rows], self._length[rows], self._keep[rows]
        low = int(offsets.min())
        span = int((offsets + lengths).max()) - low
        if span <= _SPREAD * int(lengths.sum()) + (1 << 20):
            view = memoryview(os.pread(self._fd, span, low))
            raw = [view[a : a + n] for a, n in zip((offsets - low).tolist(), lengths.tolist(), strict=True)]
        else:
            raw = [
                memoryview(os.pread(self._fd, n, a))
                for a, n in zip(offsets.tolist(), lengths.tolist(), strict=True)
            ]
        bodies: list[Piece] = []
        closes: list[bytes] = []
        for line, keep in zip(raw, keeps.tolist(), strict=True):
            if keep >= 0:  # the line's own leading bytes are the sample (see scan_inputs)
                bodies.append(line[:keep])
                closes.append(b"}")
            else:
                bodies.append(_sample_of(orjson.loads(line)))
                closes.append(b"")
        return bodies, closes

    def close(self) -> None:
        os.close(self._fd)


class RowSamples:
    """``sample`` of in-memory input rows."""

    def __init__(self, rows: Sequence[dict[str, Any]]) -> None:
        self._rows = rows

    def __call__(self, rows: IntArray) -> tuple[list[Piece], list[bytes]]:
        bodies: list[Piece] = [_sample_of(self._rows[i]) for i in rows.tolist()]
        return bodies, [b""] * len(bodies)


def _texts(values: npt.NDArray[Any]) -> list[bytes]:
    """orjson's text of each number of a 1-D array (one ``dumps`` for all)."""
    if len(values) == 0:
        return []
    return orjson.dumps(np.ascontiguousarray(values), option=_NUMPY)[1:-1].split(b",")


def _stat_slots(keys: list[str], matrix: FloatArray) -> list[list[bytes]]:
    """Per stat key, its two slots (``,"key":`` and the value) as columns over the groups; a group with a
    NaN gets its pairs (without the NaN ones) in its first value slot and empty slots elsewhere."""
    groups = matrix.shape[0]
    slots: list[list[bytes]] = []
    for position, key in enumerate(keys):
        slots.append([b"," + orjson.dumps(key) + b":"] * groups)
        slots.append(_texts(matrix[:, position]))
    has_nan = np.isnan(matrix).any(axis=1) if keys else np.zeros(groups, dtype=np.bool_)
    for group in np.flatnonzero(has_nan).tolist():
        items = {k: v for k, v in zip(keys, matrix[group].tolist(), strict=True) if not math.isnan(v)}
        for column in slots:
            column[group] = b""
        slots[1][group] = b"," + orjson.dumps(items)[1:-1] if items else b""
    return slots


def _percent(n: IntArray, expected: IntArray) -> list[bytes]:
    with np.errstate(divide="ignore", invalid="ignore"):
        percent = np.where(expected == 0, 100.0, 100.0 * n / np.where(expected == 0, 1, expected))
    return _texts(percent)


def _rollout_infos(profile: TaskProfile, results: ResultColumns, first: int, stop: int) -> list[Piece]:
    """Per group, its records joined by commas."""
    groups = profile.statistics.tasks
    row_start = int(groups.starts[first])
    row_stop = int(groups.starts[stop - 1] + groups.lengths[stop - 1])
    rows = profile.result_of_row[groups.rows[row_start:row_stop]]
    view = memoryview(results.infos)
    records: list[Piece] = [
        view[a:b]
        for a, b in zip(results.info_start[rows].tolist(), results.info_end[rows].tolist(), strict=True)
    ]
    if bool((groups.lengths[first:stop] == 1).all()):
        return records  # one record per group
    bounds = (np.append(groups.starts[first:stop], row_stop) - row_start).tolist()
    join = b",".join
    return [join(records[a:b]) for a, b in itertools.pairwise(bounds)]


def task_block(
    profile: TaskProfile, results: ResultColumns, samples: Samples, first: int = 0, stop: int | None = None
) -> bytes:
    """The lines of task groups ``[first, stop)`` (see module doc)."""
    stats = profile.statistics
    groups = stats.tasks
    stop = len(groups) if stop is None else stop
    count = stop - first
    if count <= 0:
        return b""
    n = groups.lengths[first:stop]
    expected = profile.expected[first:stop]
    bodies, closes = samples(profile.sample_input[first:stop])
    if stats.fan_out:
        named = [b',"agent_ref":' + orjson.dumps({"name": label}) for label in stats.table.labels]
        agents = [named[label] for label in stats.label_of_group[first:stop].tolist()]
    else:
        agents = [b""] * count
    columns: list[Any] = [
        [b'{"_ng_task_index":'] * count,
        _texts(stats.task_of_group[first:stop]),
        *_stat_slots(stat_keys(stats.fields), stat_matrix(groups.stats, first, stop)),
        agents,
        [b',"sample":'] * count,
        bodies,
        closes,
        [b',"num_rollouts":'] * count,
        _texts(n),
        [b',"expected_num_rollouts":'] * count,
        _texts(expected),
        [b',"missing_num_rollouts":'] * count,
        _texts(expected - n),
        [b',"reward_profile_completion_pct":'] * count,
        _percent(n, expected),
        [b',"rollout_infos":['] * count,
        _rollout_infos(profile, results, first, stop),
        [b"]}\n"] * count,
    ]
    width = len(columns)
    flat: list[Any] = [None] * (width * count)
    for position, column in enumerate(columns):
        flat[position::width] = column
    return b"".join(flat)
