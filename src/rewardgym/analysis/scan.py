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
  the rollouts are parsed once), and :func:`scan_from_parts` makes the :class:`Scan` of what it returned.
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from rewardgym.analysis.columns import RolloutColumns, sorted_columns
from rewardgym.analysis.extract import extract_row
from rewardgym.errors import DataError
from rewardgym.profile.read.chunks import RowHook

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
    rows: list[tuple[Any, ...]] = []
    kept: list[int] = []
    bad: list[tuple[int, str]] = []
    blank = 0
    loads = orjson.loads
    extract = extract_row
    # Millions of small tuples are kept alive here: the cyclic GC would re-walk them again and again
    # (they hold no cycles), so it is paused while reading.
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
        arrays = _to_arrays(rows)
    finally:
        if enabled:
            gc.enable()
    where = np.array(kept, np.int64)
    return {"rows": arrays, "line": where + 1, "offset": starts[where] + start, "bad": bad, "blank": blank,
            "lines": len(pieces)}  # fmt: skip


_ROW_DTYPE = np.dtype(
    [
        ("task", np.int64), ("rollout", np.int64), ("reward", np.float64), ("input_tokens", np.float64),
        ("output_tokens", np.float64), ("total_tokens", np.float64), ("cap", np.float64),
        ("incomplete", np.bool_), ("text_chars", np.int64), ("reasoning_chars", np.int64),
        ("tool_calls", np.int64), ("turns", np.float64), ("extracted", np.int8), ("text_hash", np.uint64),
        ("masked", np.bool_), ("agent_name", object), ("has_response", np.bool_),
    ]
)  # fmt: skip
"""One extracted row (:data:`rewardgym.analysis.extract.FIELDS`): numpy builds the table in one C pass."""


def _to_arrays(rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    if not rows:
        return {}
    table = np.array(rows, dtype=_ROW_DTYPE)
    out: dict[str, Any] = {name: np.ascontiguousarray(table[name]) for name in _ROW_DTYPE.names or ()}
    names = out.pop("agent_name").tolist()
    present = set(names)
    agents = sorted(a for a in present if a is not None)
    lookup: dict[str | None, int] = {a: i for i, a in enumerate(agents)}
    lookup[None] = -1
    out["agent_names"] = agents
    if len(present) == 1:  # the usual chunk: one agent (or none) for every row
        out["agent"] = np.full(len(names), lookup[names[0]], np.int64)
    else:
        out["agent"] = np.fromiter(map(lookup.__getitem__, names), np.int64, count=len(names))
    return out


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
    enabled = gc.isenabled()
    gc.disable()  # see _scan_range
    try:
        arrays = _to_arrays(rows)
    finally:
        if enabled:
            gc.enable()
    return {"rows": arrays, "line": kept + 1, "offset": offset[kept], "bad": bad, "blank": 0,
            "lines": len(offsets)}  # fmt: skip


ROW_HOOK = RowHook(per_row=extract_row, finish=_finish_rows)
"""The analysis columns from the profile's parse of the rollouts (``profile_files(row_hook=...)``)."""


def scan_from_parts(path: Path, parts: tuple[Any, ...] | list[Any], *, sort: bool = True) -> Scan:
    """The :class:`Scan` of ``path`` from the parts :data:`ROW_HOOK` made of its chunks, in file order.
    ``sort=False`` leaves the columns in file order: :func:`sorted_scan` must sort them before use (a
    caller that sorts in another process)."""
    columns, bad, blank = _merge(list(parts))
    if sort:
        columns = sorted_columns(columns)
    return Scan(columns=columns, unreadable=bad, blank_lines=blank, path=path)


def sorted_scan(scan: Scan) -> Scan:
    """``scan`` with its columns sorted by (task, rollout, line)."""
    return replace(scan, columns=sorted_columns(scan.columns))


def _merge(parts: list[dict[str, Any]]) -> tuple[RolloutColumns, list[tuple[int, str]], int]:
    base = 0
    names: list[str] = []
    index: dict[str, int] = {}
    pieces: dict[str, list[Any]] = {}
    bad: list[tuple[int, str]] = []
    blank = 0
    for part in parts:
        arrays = part["rows"]
        bad.extend((base + line, error) for line, error in part["bad"])
        blank += part["blank"]
        if arrays:
            for name in arrays["agent_names"]:
                index.setdefault(name, len(index))
            remap = np.array([index[a] for a in arrays["agent_names"]] + [-1], np.int64)
            for key, value in arrays.items():
                if key == "agent_names":
                    continue
                pieces.setdefault(key, []).append(remap[value] if key == "agent" else value)
            pieces.setdefault("line", []).append(part["line"] + base)
            pieces.setdefault("offset", []).append(part["offset"])
        base += part["lines"]
    names = list(index)
    empty = {
        "task": np.int64, "rollout": np.int64, "line": np.int64, "offset": np.int64, "reward": np.float64,
        "input_tokens": np.float64, "output_tokens": np.float64, "total_tokens": np.float64,
        "cap": np.float64, "incomplete": np.bool_, "text_chars": np.int64, "reasoning_chars": np.int64,
        "tool_calls": np.int64, "turns": np.float64, "extracted": np.int8, "text_hash": np.uint64,
        "masked": np.bool_, "agent": np.int64, "has_response": np.bool_,
    }  # fmt: skip
    merged = {
        key: np.concatenate(pieces[key]) if key in pieces else np.zeros(0, dtype)
        for key, dtype in empty.items()
    }
    return RolloutColumns(agents=tuple(names), **merged), bad, blank


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


def _scan(path: Path, parts: list[dict[str, Any]]) -> Scan:
    columns, bad, blank = _merge(parts)
    return Scan(columns=sorted_columns(columns), unreadable=bad, blank_lines=blank, path=path)


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
    return _scan(path, parts)
