"""The last lines of a server's log, for humans: what a start-up failure or a death prints.

- :func:`render_log_line`: a JSON log record (``{ts, level, server, logger, msg, exc?}``) becomes
  ``LEVEL message`` plus the lines of its message and exception; any other line is kept as it is.
- :func:`tail_log`: the last :data:`TAIL_LINES` rendered lines of a log file (reads at most its last
  256 KiB; a missing or unreadable file gives no lines).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import orjson

TAIL_LINES = 30


def render_log_line(line: str) -> Iterator[str]:
    """A log line for humans: JSON records become ``LEVEL message`` (+ the exception's lines)."""
    if line.startswith("{"):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            record = None
        if isinstance(record, dict) and "msg" in record:
            first, *rest = str(record["msg"]).splitlines() or [""]
            yield f"{record.get('level', '')} {first}".strip()
            yield from rest
            if record.get("exc"):
                yield from str(record["exc"]).splitlines()
            return
    yield line


def tail_log(path: Path, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` human-readable lines of a child's log file."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 256 * 1024))
            data = handle.read().decode("utf-8", "replace")
    except OSError:
        return []
    rendered = [out for raw in data.splitlines() if raw.strip() for out in render_log_line(raw)]
    return rendered[-lines:]
