"""Reading rollout rows into a :class:`~rewardgym.profile.read.chunks.ResultChunk`.

Contract: per row, its key and whether it is masked; for a measured row also its metric values (flat,
in the order of its field-name tuple) and its serialized ``rollout_infos`` record (see
:mod:`rewardgym.profile.read.extract` for what they contain). A row whose JSON is malformed, is not an object,
or lacks an integer key stops the chunk with a :class:`~rewardgym.profile.read.chunks.LineError`.

:func:`scan_results` is the hottest loop of the profiler (one pass per rollout), so it is written for
speed: one row at a time (the parsed row stays in cache), plain lists and one byte buffer instead of
per-row Python objects, the cyclic garbage collector paused (the loop creates no cycles). A row of the
previous row's layout is handled entirely by that layout's compiled function (``Plan.bind``, see
:mod:`rewardgym.profile.read.row_layouts`): the loop only parses it. Its indices' 64-bit range is checked
when the key lists become arrays; the first index out of range is reported on its own line, before any later
error. :func:`results_from_rows` applies the same rules to in-memory rows with a plain loop.

A measured row whose ``reward`` is not a number stops the chunk too, unless ``allow_non_numeric_rewards``
(see :func:`rewardgym.profile.read.extract.reward_problem`). The check costs nothing per row on the fast path:
a row's layout includes its ``reward``'s type, and every layout is checked once, on the slow path that
first meets it, before its plan is made.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import orjson

from rewardgym.profile.read.chunks import LineError, ResultChunk, RowHook, first_line_start, gc_paused
from rewardgym.profile.read.extract import (
    NUMERIC_TYPES,
    KeyProblem,
    deep_reward,
    is_masked,
    reward_problem,
    row_key,
)
from rewardgym.profile.read.row_layouts import Fast, Plan, plan_for, usage_of
from rewardgym.protocol.keys import REWARD, ROLLOUT_INDEX, TASK_INDEX

_LOW = -(2**63)
_HIGH = 2**63 - 1
_READ_BUFFER = 1 << 20


class _Output:
    """The typed arrays one chunk fills."""

    def __init__(self) -> None:
        # Plain lists: appending a reference is cheaper than array's argument parsing, and the numbers
        # are the parsed row's own objects (nothing new is allocated).
        self.tasks: list[int] = []
        self.rollouts: list[int] = []
        self.shapes: list[int] = []
        self.values: list[Any] = []
        self.infos = bytearray()
        self.info_ends: list[int] = []
        self.shape_index: dict[tuple[str, ...], int] = {}
        self.plans: dict[Any, Plan] = {}
        self.hooked: list[Any] = []
        """What a :class:`RowHook` made of each row, in file order."""
        self.with_outcome = 0
        self.outcome = [0]
        """Rows with ``response`` or ``reward`` counted by the compiled fast paths."""

    def shape_of(self, names: tuple[str, ...]) -> int:
        return self.shape_index.setdefault(names, len(self.shape_index))

    def _range_error(self) -> LineError:
        """The first row whose index is outside the 64-bit range (rows are the chunk's lines, in order)."""
        for position, (task, rollout) in enumerate(zip(self.tasks, self.rollouts, strict=True)):
            if not (_LOW <= task <= _HIGH and _LOW <= rollout <= _HIGH):
                key = row_key({TASK_INDEX: task, ROLLOUT_INDEX: rollout})
                return LineError(position + 1, b"", key.message if isinstance(key, KeyProblem) else None)
        raise AssertionError("no index is out of range")  # pragma: no cover - called on OverflowError only

    def build(self, lines: int, error: LineError | None) -> ResultChunk:
        def numbers(values: list[Any], dtype: type[np.generic]) -> np.ndarray:
            return np.array(values, dtype=dtype) if values else np.zeros(0, dtype)

        try:
            tasks, rollouts = numbers(self.tasks, np.int64), numbers(self.rollouts, np.int64)
        except OverflowError:  # an index beyond 64 bits, on an earlier line than ``error``
            return ResultChunk(lines=lines, error=self._range_error())
        shape_ids = numbers(self.shapes, np.int32)
        info_end = numbers(self.info_ends, np.int64)
        return ResultChunk(
            lines=lines,
            task=tasks,
            rollout=rollouts,
            masked=shape_ids < 0,
            shape=shape_ids,
            shapes=list(self.shape_index),
            values=numbers(self.values, np.float64),
            infos=bytes(self.infos),
            info_start=np.concatenate(([0], info_end[:-1])).astype(np.int64),
            info_end=info_end,
            with_outcome=self.with_outcome + self.outcome[0],
            error=error,
        )


def _key(row: dict[str, Any], line: int, raw: bytes) -> tuple[int, int] | LineError:
    key = row_key(row)
    return LineError(line, raw, key.message) if isinstance(key, KeyProblem) else key


def scan_results(
    path: str, start: int, end: int, allow_non_numeric_rewards: bool = False, row_hook: RowHook | None = None
) -> ResultChunk:
    """Read the rollout rows that begin in ``[start, end)`` of ``path`` (``row_hook``: see
    :class:`~rewardgym.profile.read.chunks.RowHook`)."""
    check_reward = not allow_non_numeric_rewards
    hook = None if row_hook is None else row_hook.per_row
    offsets: list[int] = []
    offsets_append = offsets.append
    out = _Output()
    hooked_append = out.hooked.append
    tasks_append, rollouts_append, shapes_append = out.tasks.append, out.rollouts.append, out.shapes.append
    values_extend, ends_append, infos = out.values.extend, out.info_ends.append, out.infos
    plans = out.plans
    loads = orjson.loads
    bound: dict[Any, Fast] = {}
    """The fast path of each layout met in this chunk, bound to the chunk's outputs."""
    fast: Fast | None = None
    with_outcome = 0
    count = 0
    error: LineError | None = None
    with gc_paused(), open(path, "rb", buffering=_READ_BUFFER) as handle:
        position = first_line_start(handle, start)
        if position is not None and position < end:
            handle.seek(position)
            for line in handle:
                if position >= end:
                    break  # this line begins in the next chunk (the last line of ours may run past ``end``)
                count += 1
                position += len(line)
                try:
                    row = loads(line)
                except orjson.JSONDecodeError:
                    error = LineError(count, line)
                    break
                if type(row) is not dict:
                    error = LineError(count, line)
                    break
                if hook is not None:  # the one test the loop pays without a hook
                    offsets_append(position - len(line))
                if fast is not None and fast(row):
                    continue  # the previous row's layout: the compiled plan did all of the row's work
                # (the hook's too); from here on the hook runs where a row does not reach a compiled plan
                task = row.get(TASK_INDEX)
                rollout = row.get(ROLLOUT_INDEX)
                if (
                    type(task) is not int
                    or type(rollout) is not int
                    or not (_LOW <= task <= _HIGH and _LOW <= rollout <= _HIGH)
                ):
                    key = _key(row, count, line)
                    if isinstance(key, LineError):
                        error = key
                        break
                    task, rollout = key
                if row.get("mask_sample") and is_masked(row):
                    if hook is not None:
                        hooked_append(hook(row))
                    with_outcome += "response" in row or "reward" in row
                    tasks_append(task)
                    rollouts_append(rollout)
                    shapes_append(-1)
                    continue
                # Not the previous row's layout: find (or make) the plan of this one.
                if REWARD in row and type(row[REWARD]) not in NUMERIC_TYPES:
                    problem = reward_problem(row) if check_reward else deep_reward(row)
                    if problem is not None:
                        error = LineError(count, line, problem)
                        break
                response = row.get("response")
                usage = response.get("usage") if type(response) is dict else None
                # One flat tuple (keys, their value types, usage keys, their types) is cheaper to build and
                # compare than four; it is unambiguous because keys are strings and types are not.
                if type(usage) is dict and usage:
                    layout: Any = (*row, *map(type, row.values()), *usage, *map(type, usage.values()))
                else:
                    usage = None
                    layout = (*row, *map(type, row.values()))
                plan = plans.get(layout)
                if plan is None:
                    plan = plans[layout] = plan_for(row, usage, row_hook)
                if plan.bind is not None:
                    fast = bound.get(layout)
                    if fast is None:
                        fast = bound[layout] = plan.bind(out)
                    if not fast(row):  # pragma: no cover - the plan was made for this very row
                        raise AssertionError("a row does not match the plan made for its layout")
                    continue
                fast = None
                if hook is not None:
                    hooked_append(hook(row))
                with_outcome += "response" in row or "reward" in row
                tasks_append(task)
                rollouts_append(rollout)
                names, row_values, info = plan.generic(row, task, rollout)
                shapes_append(out.shape_of(names))
                values_extend(row_values)
                infos += info
                ends_append(len(infos))
    out.with_outcome = with_outcome
    chunk = out.build(count, error)
    if row_hook is not None and chunk.error is None:
        chunk.extra = row_hook.finish(out.hooked, offsets)
    return chunk


def results_from_rows(rows: Iterable[Any], allow_non_numeric_rewards: bool = False) -> ResultChunk:
    """The result chunk of in-memory rollout rows (a non-dict entry is an error)."""
    out = _Output()
    count = 0
    error: LineError | None = None
    for row in rows:
        count += 1
        if not isinstance(row, dict):
            kind = "null" if row is None else type(row).__name__
            error = LineError(count, b"", f"expected an object (dict), got {kind}")
            break
        key = _key(row, count, b"")
        if isinstance(key, LineError):
            error = key
            break
        task, rollout = key
        if "response" in row or "reward" in row:
            out.with_outcome += 1
        out.tasks.append(task)
        out.rollouts.append(rollout)
        if is_masked(row):
            out.shapes.append(-1)
            continue
        problem = deep_reward(row) if allow_non_numeric_rewards else reward_problem(row)
        if problem is not None:
            error = LineError(count, b"", problem)
            break
        usage = usage_of(row)
        layout: Any = (tuple(row), tuple(map(type, row.values())))
        if usage is not None:
            layout += (tuple(usage), tuple(map(type, usage.values())))
        plan = out.plans.get(layout)
        if plan is None:
            plan = out.plans[layout] = plan_for(row, usage)
        if plan.apply is None:
            names, row_values, info = plan.generic(row, task, rollout)
        else:
            assert plan.names is not None
            names = plan.names
            row_values, info = plan.apply(row, usage, task, rollout)
        out.shapes.append(out.shape_of(names))
        out.values.extend(row_values)
        out.infos += info
        out.info_ends.append(len(out.infos))
    return out.build(count, error)
