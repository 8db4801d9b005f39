"""Reading materialized-input rows into an :class:`~rewardgym.profile.read.chunks.InputChunk`.

Contract: per row, its key, byte offset and length, agent name and run key (indexes into ``names``).
A row whose JSON is malformed, is not an object, lacks an integer key, or carries a rollout's
``response``/``reward`` (a rollouts file given as inputs), or that nests deeper than orjson can write
(its ``sample`` is written back) stops the chunk with a
:class:`~rewardgym.profile.read.chunks.LineError`.

``sample_length`` says how many leading bytes of a row's line, followed by ``}``, are exactly orjson's
serialization of the row's ``sample`` (the row without its two index keys) — true for compact lines with
the index keys last, as collection writes them — so the per-task output can copy those bytes instead of
re-parsing the row; -1 otherwise.

Speed: the rows of one task are usually byte-identical up to ``,"_ng_rollout_index":``. When a line
starts with exactly the previous fully parsed line's bytes up to that key — checked, on that line, to be
its last top-level key — only the short tail ``"_ng_rollout_index":N}`` is parsed: the two rows are equal
except for the rollout index. (A JSON string cannot contain that byte sequence unescaped, and a tail that
parses as an object on its own closes the top-level object.) Anything else is parsed in full.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import orjson

from rewardgym.io.jsonl import nesting_problem
from rewardgym.profile.read.chunks import InputChunk, LineError, first_line_start, gc_paused
from rewardgym.profile.read.extract import KeyProblem, looks_like_rollout, row_identity, row_key
from rewardgym.protocol.keys import ROLLOUT_INDEX, TASK_INDEX

_ROLLOUT_KEY = b',"_ng_rollout_index":'
_TASK_KEY = b',"_ng_task_index":'
_LOW = -(2**63)
_HIGH = 2**63 - 1


def _tail_index(tail: bytes) -> int | None:
    """N when ``tail`` is ``"_ng_rollout_index":N}`` (plus whitespace) and nothing else."""
    try:
        parsed = orjson.loads(b"{" + tail)
    except orjson.JSONDecodeError:
        return None
    if type(parsed) is not dict or len(parsed) != 1:
        return None
    value = parsed.get(ROLLOUT_INDEX)
    if type(value) is not int or not _LOW <= value <= _HIGH:
        return None
    return value


def _tail_value(line: bytes, found: int) -> int | None:
    """The rollout index written after ``,"_ng_rollout_index":`` at ``found``, when it ends the line."""
    digits = line[found + len(_ROLLOUT_KEY) : -2]
    if (
        line.endswith(b"}\n")
        and digits.isdigit()
        and len(digits) <= 18
        and (digits[0] != 48 or len(digits) == 1)
    ):
        return int(digits)
    return _tail_index(line[found + 1 :])


def _sample_length(row: dict[str, Any], line: bytes, cut: int) -> int:
    """How many leading bytes of ``line``, closed by ``}``, are orjson's serialization of the row without its
    two index keys (the ``sample``), or -1 when the line is not written that way (compact, indices last)."""
    keys = list(row)
    if len(keys) < 3 or keys[-2] != TASK_INDEX or keys[-1] != ROLLOUT_INDEX:
        return -1
    if orjson.dumps(row) != line.rstrip(b"\r\n"):
        return -1
    return line.rfind(_TASK_KEY, 0, cut)


def _role_problem(row: dict[str, Any]) -> str:
    found = "response" if "response" in row else "reward"
    return (
        f"this row has a '{found}' field, so it looks like a rollouts file, not materialized inputs "
        "(did you swap --inputs and --rollouts?)"
    )


class _Inputs:
    """Accumulates one chunk's rows: per fully parsed row its identity, per row its source and key."""

    def __init__(self, check_role: bool, first_offset: int = 0) -> None:
        self.check_role = check_role
        self.first_offset = first_offset
        self.parsed_task: list[int] = []
        self.parsed_agent: list[int] = []
        self.parsed_run: list[int] = []
        self.parsed_sample: list[int] = []
        """Per parsed row: leading bytes of its line that, closed by ``}``, are its ``sample`` (or -1)."""
        self.parsed_at: list[int] = []
        """Per parsed row: its position among the rows (the rows after it, up to the next parsed row, are
        the same row with another rollout index)."""
        self.rollout: list[int] = []
        self.length: list[int] = []
        """Per row: its byte length, newline included (rows are contiguous, so offsets follow)."""
        self.index: dict[str, int] = {}
        self.names: list[str] = []
        self.lines = 0

    def _id(self, name: str | None) -> int:
        if name is None:
            return -1
        found = self.index.get(name)
        if found is None:
            found = self.index[name] = len(self.names)
            self.names.append(name)
        return found

    def add(self, row: Any, raw: bytes, length: int, sample: int = -1) -> LineError | None:
        """Record one parsed row, or say what is wrong with it."""
        if not isinstance(row, dict):
            kind = "null" if row is None else type(row).__name__
            return LineError(self.lines, raw, None if raw else f"expected an object (dict), got {kind}")
        key = row_key(row)
        if isinstance(key, KeyProblem):
            return LineError(self.lines, raw, key.message)
        if self.check_role and looks_like_rollout(row):
            return LineError(self.lines, raw, _role_problem(row))
        agent, run_key = row_identity(row)
        self.parsed_at.append(len(self.rollout))
        self.parsed_task.append(key[0])
        self.parsed_agent.append(self._id(agent))
        self.parsed_run.append(self._id(run_key))
        self.parsed_sample.append(sample)
        self.rollout.append(key[1])
        self.length.append(length)
        return None

    def build(self, error: LineError | None, offsets: np.ndarray | None = None) -> InputChunk:
        def numbers(values: list[int], dtype: type[np.generic]) -> np.ndarray:
            return np.array(values, dtype=dtype) if values else np.zeros(0, dtype)

        rows = len(self.rollout)
        source = np.repeat(
            np.arange(len(self.parsed_at), dtype=np.int64),
            np.diff(np.append(numbers(self.parsed_at, np.int64), rows)),
        )
        length = numbers(self.length, np.int64)
        if offsets is None:
            offsets = self.first_offset + np.concatenate(([0], np.cumsum(length)[:-1])).astype(np.int64)
        return InputChunk(
            lines=self.lines,
            task=numbers(self.parsed_task, np.int64)[source],
            rollout=numbers(self.rollout, np.int64),
            offset=offsets[: len(source)],
            length=length,
            agent=numbers(self.parsed_agent, np.int32)[source],
            run_key=numbers(self.parsed_run, np.int32)[source],
            sample_length=numbers(self.parsed_sample, np.int64)[source],
            names=self.names,
            error=error,
        )


_TAILS = {b"%d}\n" % n: n for n in range(1 << 12)}
"""The usual tails ``N}\n`` of a quick line, with their rollout index."""


def scan_inputs(path: str, start: int, end: int) -> InputChunk:
    """Read the materialized-input rows that begin in ``[start, end)`` of ``path``."""
    loads = orjson.loads
    tails = _TAILS
    head = b""
    """The last fully parsed line up to and including ``,"_ng_rollout_index":`` (empty: no quick path)."""
    cut = -1
    digits_at = 0
    with gc_paused(), open(path, "rb", buffering=1 << 20) as handle:
        first = first_line_start(handle, start)
        inputs = _Inputs(check_role=True, first_offset=first or 0)
        if first is None or first >= end:
            return inputs.build(None)
        handle.seek(first)
        position = first
        rollout_append, length_append = inputs.rollout.append, inputs.length.append
        for line in handle:
            size = len(line)
            position += size
            if head and line.startswith(head):
                rollout = tails.get(line[digits_at:])
                if rollout is None:
                    # An unusual tail (CRLF, spaces, a last line without newline, a large or signed
                    # number): exact rules, and anything that is not just ``N}`` is parsed by orjson.
                    rollout = _tail_value(line, cut)
                if rollout is not None:
                    rollout_append(rollout)
                    length_append(size)
                    if position >= end:
                        break
                    continue
            head = b""
            inputs.lines = len(inputs.rollout) + 1
            try:
                row = loads(line)
            except orjson.JSONDecodeError:
                return inputs.build(LineError(inputs.lines, line))
            sample = -1
            found = line.rfind(_ROLLOUT_KEY)
            if found > 0 and type(row) is dict and _tail_value(line, found) == row.get(ROLLOUT_INDEX):
                cut, digits_at = found, found + len(_ROLLOUT_KEY)
                head = line[:digits_at]
                try:
                    sample = _sample_length(row, line, found)
                except orjson.JSONEncodeError:  # nested deeper than orjson writes: reported just below
                    sample = -2
            # The row's ``sample`` is written back, so orjson must be able to write it: a row whose line is
            # its own serialization was just written by orjson; any other is checked here.
            too_deep = nesting_problem(line, row) if sample < 0 and type(row) is dict else None
            if too_deep is not None:
                return inputs.build(LineError(inputs.lines, line, too_deep))
            problem = inputs.add(row, line, size, sample)
            if problem is not None:
                return inputs.build(problem)
            if position >= end:
                break
    inputs.lines = len(inputs.rollout)
    return inputs.build(None)


def inputs_from_rows(rows: Iterable[Any]) -> InputChunk:
    """The input chunk of in-memory rows (offset = position in the sequence; no role check)."""
    inputs = _Inputs(check_role=False)
    for row in rows:
        inputs.lines += 1
        problem = inputs.add(row, b"", 0)
        if problem is not None:
            break
    else:
        problem = None
    return inputs.build(problem, offsets=np.arange(len(inputs.rollout), dtype=np.int64))
