"""JSON Lines I/O: strict streaming reads, crash-safe appends and atomic whole-file writes.

Contract:
- :func:`iter_jsonl` yields ``(line_number, object)`` one line at a time (constant memory). Every fault —
  malformed JSON, a blank line, bytes that are not UTF-8, a line that is not a JSON object — raises
  :class:`~rewardgym.errors.DataError` naming ``file:line`` and a short snippet of the line.
- :class:`JsonlAppender` writes one row per line and flushes after each row, so a crash loses at most the
  row being written. Opening it repairs a torn final line first (see :func:`repair_torn_tail`).
- :func:`read_jsonl_tolerant` is the resume reader: a final line that has no newline *and* does not parse is
  a torn write; it is reported and treated as absent. Any other bad line is still an error.
- :func:`atomic_write_bytes` / :func:`atomic_writer` (from :mod:`rewardgym.io.outputs`) write a temp file
  in the target's folder and rename it over the target: readers see the old file or the whole new one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from rewardgym.errors import DataError
from rewardgym.io.outputs import atomic_writer, check_writable_target

_SNIPPET_CHARS = 80


def snippet(line: bytes) -> str:
    """A short, printable excerpt of a raw line for error messages."""
    text = line.decode("utf-8", errors="replace").rstrip("\r\n")
    return text if len(text) <= _SNIPPET_CHARS else text[:_SNIPPET_CHARS] + "…"


def parse_line(raw: bytes, path: str | os.PathLike[str], line_number: int) -> dict[str, Any]:
    """Parse one JSONL line into a dict, or raise a :class:`DataError` naming ``path:line_number``."""
    body = raw.rstrip(b"\r\n")
    where = f"{os.fspath(path)}:{line_number}"
    if not body.strip():
        raise DataError(f"{where}: blank line (every line must hold one JSON object)")
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            raise DataError(f"{where}: line is not valid UTF-8: {snippet(body)!r}") from None
        raise DataError(f"{where}: malformed JSON ({exc.msg}): {snippet(body)!r}") from None
    if not isinstance(value, dict):
        kind = type(value).__name__ if value is not None else "null"
        raise DataError(f"{where}: expected a JSON object, got {kind}: {snippet(body)!r}")
    return value


def _open_for_read(path: str | os.PathLike[str], what: str) -> IO[bytes]:
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

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        check_writable_target(self.path)  # never append to a device, FIFO or link
        self.repaired = repair_torn_tail(self.path)
        self._handle: IO[bytes] | None = open(self.path, "ab")  # noqa: SIM115 - closed in close()
        self.rows_written = 0

    def write(self, row: Any) -> None:
        if self._handle is None:
            raise ValueError(f"appender for {self.path} is closed")
        self._handle.write(orjson.dumps(row) + b"\n")
        self._handle.flush()
        self.rows_written += 1

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
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
