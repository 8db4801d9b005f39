"""Reading a rollouts file into :class:`~rewardgym.analysis.columns.RolloutColumns`, in parallel.

Contract of :func:`scan_rollouts`:

- a missing or unreadable file is a :class:`~rewardgym.errors.DataError` naming it and ``--rollouts``;
- the file is cut into byte ranges at line starts; large files are read by forked worker processes (one
  per core), each returning compact numpy columns, never parsed rows;
- a line that is not a JSON object, or has no integer task / rollout index, is *unreadable*: it is kept
  out of the columns and listed in :attr:`Scan.unreadable` as ``(line, error)`` with 1-based line
  numbers (blank lines are skipped and counted, as NeMo Gym's health check does). The caller decides
  whether that is fatal (``gym eval analyze``) or a finding (``gym eval health-check``);
- the columns come back sorted by (task, rollout, line);
- :data:`ROW_HOOK` takes the same columns from the profile's own parse (``gym eval profile --report``:
  the rollouts are parsed once), and :func:`scan_from_parts` makes the :class:`Scan` of what it returned
  (:func:`merge_parts` joins them in file order, :meth:`Merged.sorted` sorts: two steps, so that they
  can run in different processes).
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from rewardgym.analysis.columns import RolloutColumns, key_order
from rewardgym.analysis.extract import RECORD, agent_names, layout_record, pack_row
from rewardgym.errors import DataError
from rewardgym.profile.read.chunks import RowHook
from rewardgym.stats.arrays import IntArray

PARALLEL_FROM = 64 << 20
"""Files at least this large are read by worker processes."""
RANGE_BYTES = 32 << 20
"""About how much one worker task reads (bounds a worker's memory: the bytes, their lines, their rows)."""


@dataclass(frozen=True)
class Scan:
    """The columns of a rollouts file and what could not be read."""

    columns: RolloutColumns
    unreadable: list[tuple[int, str]]
    blank_lines: int
    path: Path


def _ranges(path: Path, size: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` byte ranges of the file, each starting at a line start."""
    cuts = [0]
    with open(path, "rb") as handle:
        for k in range(1, parts):
            handle.seek(max(size * k // parts, cuts[-1]))
            handle.readline()
            position = handle.tell()
            if position >= size:
                break
            if position > cuts[-1]:
                cuts.append(position)
    cuts.append(size)
    return list(itertools.pairwise(cuts))


def _scan_range(path: str, start: int, end: int) -> dict[str, Any]:
    """Columns of the lines in ``[start, end)`` (line numbers relative to the range, from 1)."""
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read(end - start)
    pieces = data.split(b"\n")
    del data
    if pieces and not pieces[-1]:
        pieces.pop()  # the empty tail after the final newline
    lengths = np.fromiter(map(len, pieces), np.int64, count=len(pieces)) + 1
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])) if len(pieces) else np.zeros(0, np.int64)
    rows: list[bytes] = []
    kept: list[int] = []
    bad: list[tuple[int, str]] = []
    blank = 0
    loads = orjson.loads
    extract = pack_row
    # Every line makes a parsed row of many containers: the cyclic GC, triggered by their allocation
    # count, would walk them for nothing (they hold no cycles), so it is paused while reading.
    enabled = gc.isenabled()
    gc.disable()
    try:
        for index, raw in enumerate(pieces):
            try:
                row = loads(raw)
            except orjson.JSONDecodeError:
                if raw.strip():
                    bad.append((index + 1, "malformed JSON"))
                else:
                    blank += 1
                continue
            if type(row) is not dict:
                bad.append((index + 1, "not a JSON object"))
                continue
            fields = extract(row)
            if isinstance(fields, str):
                bad.append((index + 1, fields))
                continue
            rows.append(fields)
            kept.append(index)
        arrays = _records_part(rows)
    finally:
        if enabled:
            gc.enable()
    where = np.array(kept, np.int64)
    return {"rows": arrays, "line": where + 1, "offset": starts[where] + start, "bad": bad, "blank": blank,
            "lines": len(pieces)}  # fmt: skip


RECORD_DTYPE = np.dtype(
    [
        ("task", "<i8"), ("rollout", "<i8"), ("reward", "<f8"), ("input_tokens", "<f8"),
        ("output_tokens", "<f8"), ("total_tokens", "<f8"), ("cap", "<f8"), ("incomplete", "?"),
        ("text_chars", "<i8"), ("reasoning_chars", "<i8"), ("tool_calls", "<i8"), ("turns", "<f8"),
        ("extracted", "i1"), ("text_hash", "<u8"), ("masked", "?"), ("agent", "<i8"), ("has_response", "?"),
    ]
)  # fmt: skip
"""The table of joined :data:`~rewardgym.analysis.extract.RECORD` s (same fields, same packed layout)."""
assert RECORD_DTYPE.itemsize == RECORD.size


def _records_part(records: list[bytes]) -> dict[str, Any]:
    """A chunk's records, joined, with the agent-name table their indices point into."""
    return {"records": b"".join(records), "agent_names": agent_names()}


def _finish_rows(rows: list[Any], offsets: list[int]) -> dict[str, Any]:
    """A chunk part (as :func:`_scan_range` returns) of the rows the profile's reader extracted: each of
    its rows is one line of the chunk (the profile stops a chunk at a blank or malformed line)."""
    offset = np.array(offsets, np.int64)
    bad = [(index + 1, fields) for index, fields in enumerate(rows) if isinstance(fields, str)]
    kept = np.arange(len(rows), dtype=np.int64)
    if bad:  # a key problem: the profile reports it too, on the same line
        drop = np.array([line - 1 for line, _ in bad], np.int64)
        kept = np.delete(kept, drop)
        rows = [rows[i] for i in kept.tolist()]
    return {"rows": _records_part(rows), "line": kept + 1, "offset": offset[kept], "bad": bad, "blank": 0,
            "lines": len(offsets)}  # fmt: skip


ROW_HOOK = RowHook(per_row=pack_row, finish=_finish_rows, layout=layout_record)
"""The analysis columns from the profile's parse of the rollouts (the ``row_hook`` of
:class:`~rewardgym.analysis.profile_report.ReportObserver`, a :class:`~rewardgym.profile.ProfileObserver`)."""


@dataclass
class Merged:
    """The parts of a rollouts file joined, in file order: one record table, its line numbers and byte
    offsets, the agent names its indices point at, and what could not be read."""

    path: Path
    table: np.ndarray
    line: IntArray
    offset: IntArray
    agents: tuple[str, ...]
    unreadable: list[tuple[int, str]]
    blank_lines: int

    def sorted(self) -> Scan:
        """The :class:`Scan`: the records ordered by (task, rollout, line), each field gathered into its
        own contiguous column (the table and the columns are the most this holds at once)."""
        table, line, offset = self.table, self.line, self.offset
        order = key_order(table["task"], table["rollout"], line)
        in_order = bool(np.all(order[1:] > order[:-1]))
        if not in_order:
            line, offset = line[order], offset[order]

        def gather(values: np.ndarray) -> np.ndarray:
            # Many fields hold one value throughout (no tool calls, no reasoning, no cap…): such a
            # column is filled, not gathered — one sequential pass to find it out instead of a random one.
            if in_order or _constant(values):
                if in_order:
                    return np.ascontiguousarray(values)
                return np.full(values.shape, values[0], dtype=values.dtype)
            return values[order]

        columns = RolloutColumns(
            agents=self.agents,
            line=line,
            offset=offset,
            **{name: gather(table[name]) for name in RECORD_DTYPE.names or ()},
        )
        return Scan(columns=columns, unreadable=self.unreadable, blank_lines=self.blank_lines, path=self.path)


def _constant(values: np.ndarray) -> bool:
    """All entries equal (NaN equal to NaN)."""
    if values.shape[0] == 0:
        return True
    first = values[0]
    if values.dtype.kind == "f" and np.isnan(first):
        return bool(np.isnan(values).all())
    return bool((values == first).all())


def merge_parts(path: Path, parts: tuple[Any, ...] | list[Any]) -> Merged:
    """Join the parts :data:`ROW_HOOK` (or the scan's own workers) made of ``path``'s chunks, in file
    order. Each part's records are dropped from it once copied (at 10^6 rollouts they are 108 MB)."""
    base = 0
    index: dict[str, int] = {}
    lines: list[Any] = []
    offsets: list[Any] = []
    bad: list[tuple[int, str]] = []
    blank = 0
    for part in parts:
        bad.extend((base + line, error) for line, error in part["bad"])
        blank += part["blank"]
        lines.append(part["line"] + base)
        offsets.append(part["offset"])
        base += part["lines"]
    table = np.frombuffer(bytearray().join(part["rows"]["records"] for part in parts), RECORD_DTYPE)
    position = 0
    for part in parts:
        rows = part["rows"]
        count = len(rows.pop("records")) // RECORD.size
        names = rows["agent_names"]
        if count and names:
            remap = np.array([index.setdefault(name, len(index)) for name in names] + [-1], np.int64)
            agents = table["agent"][position : position + count]
            agents[:] = remap[agents]
        position += count
    return Merged(
        path=path,
        table=table,
        line=(np.concatenate(lines) if lines else np.zeros(0, np.int64)).astype(np.int64),
        offset=(np.concatenate(offsets) if offsets else np.zeros(0, np.int64)).astype(np.int64),
        agents=tuple(index),
        unreadable=bad,
        blank_lines=blank,
    )


def scan_from_parts(path: Path, parts: tuple[Any, ...] | list[Any]) -> Scan:
    """The :class:`Scan` of ``path`` from the parts :data:`ROW_HOOK` made of its chunks, in file order."""
    return merge_parts(path, parts).sorted()


def _file_size(path: Path) -> int:
    try:
        size = path.stat().st_size
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise DataError(f"Input file not found: '{path}' (--rollouts)") from None
    except OSError as exc:
        raise DataError(f"Cannot read '{path}' (--rollouts): {exc.strerror}") from None
    if path.is_dir():
        raise DataError(f"'{path}' (--rollouts) is a directory, not a JSONL file")
    return size


def scan_rollouts(path: Path, *, workers: int | None = None) -> Scan:
    """Read ``path`` into sorted columns (see module doc)."""
    size = _file_size(path)
    cores = workers if workers is not None else (os.cpu_count() or 1)
    if size < PARALLEL_FROM or cores <= 1:
        parts = [_scan_range(str(path), a, b) for a, b in _ranges(path, size, max(1, size // RANGE_BYTES))]
    else:
        ranges = _ranges(path, size, max(cores * 4, size // RANGE_BYTES))
        context = multiprocessing.get_context("fork")
        with context.Pool(min(cores, len(ranges))) as pool:
            parts = pool.starmap(_scan_range, [(str(path), a, b) for a, b in ranges], chunksize=1)
    return scan_from_parts(path, parts)
