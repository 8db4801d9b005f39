"""The compact, picklable result of reading one byte range ("chunk") of an input or rollouts file.

Contract:

- A chunk ``[start, end)`` owns the lines that *begin* in that range (the first is found with
  :func:`first_line_start`), so chunks of one file can be read by different processes and together
  cover every line exactly once. Each chunk
  reports how many lines it owns; the caller turns chunk-local line numbers into file line numbers.
- The first bad line stops a chunk and is returned as a :class:`LineError` (never raised), so the caller
  can report the first bad line of the file with its true line number.
- A :class:`RowHook` lets a caller above the profile (``gym eval profile --report``) take its own fields
  from the same parse: ``per_row`` sees every parsed row of a rollouts chunk, ``finish`` turns what it
  returned (and the rows' byte offsets) into the chunk's compact :attr:`ResultChunk.extra`, in the worker.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np


@dataclass
class LineError:
    """The first bad line of a chunk: its chunk-local line number and what is wrong with it."""

    line: int
    """1-based line number within the chunk."""
    raw: bytes
    """The line as read (used to describe JSON syntax errors)."""
    message: str | None = None
    """What is wrong, when the line is valid JSON (None: a JSON syntax/encoding problem)."""


@dataclass
class InputChunk:
    """Compact columns of the materialized-input rows of one chunk."""

    lines: int = 0
    task: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rollout: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    offset: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Byte offset of each row's line (position in the sequence for in-memory rows)."""
    length: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Byte length of each row's line."""
    sample_length: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Leading bytes of the line that, followed by ``}``, are the row's ``sample`` JSON (-1: re-parse)."""
    agent: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    """Index of ``agent_ref.name`` in ``names`` (-1: none)."""
    run_key: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    """Index of the run key in ``names`` (-1: none)."""
    names: list[str] = field(default_factory=list)
    error: LineError | None = None


@dataclass
class ResultChunk:
    """Compact columns of the rollout rows of one chunk."""

    lines: int = 0
    task: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rollout: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    masked: np.ndarray = field(default_factory=lambda: np.zeros(0, np.bool_))
    shape: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    """Index of the row's metric field names in ``shapes`` (-1 for a masked row)."""
    shapes: list[tuple[str, ...]] = field(default_factory=list)
    values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    """Metric values of the measured rows, row after row, each in its ``shapes`` order."""
    infos: bytes = b""
    """Serialized ``rollout_infos`` records of the measured (unmasked) rows, back to back (in any order)."""
    info_start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Per measured row: where its record starts in ``infos``."""
    info_end: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Per measured row: where its record ends in ``infos``."""
    with_outcome: int = 0
    """Rows that carry ``response`` or ``reward`` (a rollouts file has some; a materialized one has none)."""
    error: LineError | None = None
    extra: Any = None
    """What a :class:`RowHook`'s ``finish`` made of the chunk's rows (None without a hook)."""


@dataclass(frozen=True)
class RowHook:
    """Extra per-row work in the rollouts reader, passed in by a caller above the profile.

    Both must be module-level functions (the hook travels to the forked workers with each job).
    ``per_row(row)`` (or its ``layout`` specialisation) is called with every parsed JSON object of the
    chunk, in file order; ``finish(values, offsets)`` gets the list of its results and the byte offsets of
    their lines, and returns the chunk's :attr:`ResultChunk.extra` (keep it compact: numpy arrays, not
    per-row objects, since it is pickled back from the worker). A chunk with a bad line is reported as an
    error, so its ``extra`` is never used.
    """

    per_row: Callable[[dict[str, Any]], Any]
    finish: Callable[[list[Any], list[int]], Any]
    layout: Callable[[dict[str, Any], dict[str, Any] | None], Callable[..., Any] | None] | None = None
    """Optional: ``per_row`` specialised for one row layout. The reader's compiled fast path has checked
    that a row has exactly the keys, key order and value types of ``row`` (and, when ``usage`` is not
    None, that its non-empty ``response.usage`` has exactly those of ``usage``) and unpacked the values;
    ``layout(row, usage)`` returns a function it calls as ``f(row, *row.values(), *usage.values())``
    (usage values only with a usage layout), which must return exactly what ``per_row(row)`` returns —
    or None: the fast path then calls ``per_row``."""


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (hot loops that create many short-lived, acyclic objects)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def first_line_start(handle: BinaryIO, start: int) -> int | None:
    """Offset of the first line that begins at or after ``start`` (None: there is none)."""
    if start == 0:
        return 0
    handle.seek(start - 1)
    position = start - 1
    while True:
        block = handle.read(1 << 16)
        if not block:
            return None
        cut = block.find(b"\n")
        if cut >= 0:
            return position + cut + 1
        position += len(block)
