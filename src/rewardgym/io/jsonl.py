"""JSON Lines I/O: strict streaming reads, crash-safe appends and atomic whole-file writes.

Contract:
- :func:`iter_jsonl` yields ``(line_number, object)`` one line at a time (constant memory). Every fault —
  malformed JSON, a blank line, bytes that are not UTF-8, a line that is not a JSON object, ``NaN`` /
  ``Infinity`` / a number beyond a double (named as such), nesting deeper than :data:`MAX_DEPTH` (which
  could be read but not written back) — raises :class:`~rewardgym.errors.DataError` naming ``file:line``
  and a short snippet of the line. A path that is not a regular file (a pipe, ``/dev/stdin``, a device) is
  refused by name before it is opened (see :func:`rewardgym.io.inputs.check_input_file`).
- :func:`iter_object_lines` is the lenient reader of sidecars: the lines that are JSON objects, others
  skipped.
- :class:`JsonlAppender` writes one row per line and flushes after each row, so a crash loses at most the
  row being written. Opening it repairs a torn final line first (see :func:`repair_torn_tail`). A write
  that fails (a full disk, an I/O error) cuts the file back to its last whole row and raises
  :class:`~rewardgym.io.oserrors.FileAccessError` naming the file, for this row and every later one.
- :func:`read_jsonl_tolerant` is the resume reader: a final line that has no newline *and* does not parse is
  a torn write; it is reported and treated as absent. Any other bad line is still an error.
- :func:`atomic_write_bytes` / :func:`atomic_writer` (from :mod:`rewardgym.io.outputs`) write a temp file
  in the target's folder and rename it over the target: readers see the old file or the whole new one. An
  operating-system error while writing (``ENOSPC``, ``EROFS``, ``EIO``) removes the temp file and is reported
  under the target's name (:func:`rewardgym.io.oserrors.output_error`).
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from rewardgym.errors import DataError
from rewardgym.io.inputs import refuse_special_input
from rewardgym.io.oserrors import output_error, writing
from rewardgym.io.outputs import atomic_writer, check_writable_target, refuse_recorded_input

_SNIPPET_CHARS = 80
MAX_DEPTH = 254
"""The deepest nesting orjson writes (it reads up to 1024 levels): a deeper row is refused when read, by
file:line, rather than failing later when it is written back."""


def snippet(line: bytes) -> str:
    """A short, printable excerpt of a raw line for error messages."""
    text = line.decode("utf-8", errors="replace").rstrip("\r\n")
    return text if len(text) <= _SNIPPET_CHARS else text[:_SNIPPET_CHARS] + "…"


def nesting_depth(value: Any) -> int:
    """How deeply lists and objects nest in ``value`` (a scalar: 0, ``[]``: 1)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def nesting_problem(raw: bytes, value: Any) -> str | None:
    """Why a parsed line cannot be written back (nested deeper than :data:`MAX_DEPTH`), or None. Cheap for
    ordinary lines: the value is walked only when the line holds more brackets than the limit."""
    if raw.count(b"{") + raw.count(b"[") <= MAX_DEPTH:
        return None
    depth = nesting_depth(value)
    if depth <= MAX_DEPTH:
        return None
    return f"nested {depth} levels deep; at most {MAX_DEPTH} levels can be written back as JSON"


def non_finite_problem(body: bytes) -> str | None:
    """When the only fault of a line that orjson refused is ``NaN``, ``Infinity`` or a number too large
    for a double, say so (Python's lenient ``json`` module reads those); None otherwise."""
    import json  # only on this error path: the readers' start-up stays light

    found: list[str] = []

    def constant(name: str) -> float:
        found.append(name)
        return 0.0

    def number(text: str) -> float:
        value = float(text)
        if math.isinf(value):
            found.append(text)
        return value

    try:
        json.loads(body, parse_constant=constant, parse_float=number)
    except (ValueError, RecursionError):
        return None
    if not found:
        return None
    token = found[0]
    if token in ("NaN", "Infinity", "-Infinity"):
        return f"{token} is not valid JSON (numbers must be finite; write null or a number)"
    return f"the number {token} is too large for a double (it would be Infinity, which is not valid JSON)"


def parse_line(raw: bytes, path: str | os.PathLike[str], line_number: int) -> dict[str, Any]:
    """Parse one JSONL line into a dict, or raise a :class:`DataError` naming ``path:line_number``."""
    body = raw.rstrip(b"\r\n")
    if not body or body.isspace():
        raise DataError(f"{_where(path, line_number)}: blank line (every line must hold one JSON object)")
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        where = _where(path, line_number)
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            raise DataError(f"{where}: line is not valid UTF-8: {snippet(body)!r}") from None
        non_finite = non_finite_problem(body)
        if non_finite is not None:
            raise DataError(f"{where}: {non_finite}: {snippet(body)!r}") from None
        raise DataError(f"{where}: malformed JSON ({exc.msg}): {snippet(body)!r}") from None
    if not isinstance(value, dict):
        kind = type(value).__name__ if value is not None else "null"
        raise DataError(f"{_where(path, line_number)}: expected a JSON object, got {kind}: {snippet(body)!r}")
    too_deep = nesting_problem(body, value)
    if too_deep is not None:
        raise DataError(f"{_where(path, line_number)}: {too_deep}")
    return value


def _where(path: str | os.PathLike[str], line_number: int) -> str:
    """``path:line`` of an error message (built only for a line that fails: a reader parses 10^6 of them)."""
    return f"{os.fspath(path)}:{line_number}"


def _open_for_read(path: str | os.PathLike[str], what: str) -> IO[bytes]:
    refuse_special_input(path, what)
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise DataError(f"{what} not found: '{os.fspath(path)}'") from None
    except IsADirectoryError:
        raise DataError(f"{what} is a directory, not a file: '{os.fspath(path)}'") from None
    except PermissionError:
        raise DataError(f"{what} is not readable (permission denied): '{os.fspath(path)}'") from None


def iter_jsonl(
    path: str | os.PathLike[str], *, limit: int | None = None, what: str = "File"
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, row)`` for each line (1-based), reading at most ``limit`` lines."""
    with _open_for_read(path, what) as handle:
        for number, raw in enumerate(handle, start=1):
            if limit is not None and number > limit:
                return
            yield number, parse_line(raw, path, number)


def iter_object_lines(handle: IO[bytes]) -> Iterator[dict[str, Any]]:
    """The lines of an open JSONL file that parse to a JSON object, skipping every other line — for the
    sidecar readers that count or look up what they can and never stop on a damaged line."""
    loads = orjson.loads
    for raw in handle:
        try:
            row = loads(raw)
        except orjson.JSONDecodeError:
            continue
        if type(row) is dict:
            yield row


def read_jsonl(path: str | os.PathLike[str], *, what: str = "File") -> list[dict[str, Any]]:
    """All rows of a JSONL file (strict)."""
    return [row for _, row in iter_jsonl(path, what=what)]


@dataclass(frozen=True)
class TornLine:
    """A final line cut short by a crash: where it starts and what it held."""

    line_number: int
    offset: int
    text: str


def read_jsonl_tolerant(
    path: str | os.PathLike[str], *, what: str = "File"
) -> tuple[list[dict[str, Any]], TornLine | None]:
    """Rows of a file that may end in a torn write; the torn final line is returned separately."""
    rows: list[dict[str, Any]] = []
    offset = 0
    with _open_for_read(path, what) as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.endswith(b"\n"):
                try:
                    rows.append(parse_line(raw, path, number))
                except DataError:
                    return rows, TornLine(number, offset, snippet(raw))
                return rows, None
            rows.append(parse_line(raw, path, number))
            offset += len(raw)
    return rows, None


def repair_torn_tail(path: str | os.PathLike[str]) -> TornLine | None:
    """Make a file end on a whole line: cut a torn last line, or end a complete one with a newline."""
    target = Path(path)
    if not target.exists() or target.stat().st_size == 0:
        return None
    with open(target, "rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return None
        # Find the start of the last line by scanning back in blocks (files can be large).
        end = handle.seek(0, os.SEEK_END)
        start = end
        while start > 0:
            step = min(65536, start)
            handle.seek(start - step)
            block = handle.read(step)
            cut = block.rfind(b"\n")
            if cut >= 0:
                start = start - step + cut + 1
                break
            start -= step
        handle.seek(start)
        tail = handle.read()
        try:
            parse_line(tail, path, 0)
        except DataError:
            handle.truncate(start)
            line_number = _count_lines(target, start) + 1
            return TornLine(line_number, start, snippet(tail))
        handle.seek(0, os.SEEK_END)
        handle.write(b"\n")
        return None


def _count_lines(path: Path, upto: int) -> int:
    count = 0
    with open(path, "rb") as handle:
        remaining = upto
        while remaining > 0:
            block = handle.read(min(1 << 20, remaining))
            if not block:
                break
            count += block.count(b"\n")
            remaining -= len(block)
    return count


class JsonlAppender:
    """Append rows to a JSONL file, one line each, flushed at once (a crash loses at most one row)."""

    def __init__(self, path: str | os.PathLike[str], encode: Callable[[Any], bytes] = orjson.dumps) -> None:
        """``encode`` turns a row into its line (without the newline); the collector's also masks secrets."""
        self._encode = encode
        self.path = Path(path)
        refuse_recorded_input(self.path)  # before the folder is made: a refused output leaves no trace
        self.path.parent.mkdir(parents=True, exist_ok=True)
        check_writable_target(self.path)  # never append to a device, FIFO or link
        self.repaired = repair_torn_tail(self.path)
        with writing(self.path):
            self._handle: IO[bytes] | None = open(self.path, "ab")  # noqa: SIM115 - closed in close()
        self.rows_written = 0
        self._size = self._handle.tell()
        self._failed: BaseException | None = None

    def write(self, row: Any) -> None:
        if self._failed is not None:
            raise self._failed  # every later row gets the first error (a full disk, not "closed")
        if self._handle is None:
            raise ValueError(f"appender for {self.path} is closed")
        line = self._encode(row) + b"\n"
        try:
            self._handle.write(line)
            self._handle.flush()
        except OSError as exc:
            self._failed = output_error(exc, self.path)
            self._abandon()
            raise self._failed from None
        self._size += len(line)
        self.rows_written += 1

    def fsync(self) -> None:
        """Make the rows written so far durable (for a writer that needs it once per batch, not per row)."""
        if self._handle is not None:
            os.fsync(self._handle.fileno())

    def _abandon(self) -> None:
        """After a failed write: drop the handle (its buffer holds part of the row) and cut the file back to
        its last whole row, so the rows written before stay and no torn line is left (where possible)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            with contextlib.suppress(OSError):
                handle.close()
        with contextlib.suppress(OSError):
            os.truncate(self.path, self._size)

    def close(self) -> None:
        if self._handle is not None:
            try:
                with writing(self.path):
                    self._handle.close()
            finally:
                self._handle = None

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def atomic_write_jsonl(path: str | os.PathLike[str], rows: Iterable[Any]) -> int:
    """Write rows as JSONL atomically; returns the number of rows."""
    count = 0
    with atomic_writer(path) as handle:
        for row in rows:
            handle.write(orjson.dumps(row) + b"\n")
            count += 1
    return count
