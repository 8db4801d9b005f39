"""The checks every call passes before it may change anything (one clear error, nothing changed)."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from rewardgym.curriculum.errors import BadReward, DuplicateReport, UnknownTask
from rewardgym.errors import UsageError
from rewardgym.stats.arrays import FloatArray, IntArray


class Reported(Protocol):
    """What a report is checked against."""

    reward_range: tuple[float, float]

    @property
    def size(self) -> int: ...

    def waiting(self, task: int) -> int: ...


def check_tasks(size: int, tasks: npt.ArrayLike) -> IntArray:
    """``tasks`` as task indices, or :class:`UnknownTask`."""
    index = np.asarray(tasks)
    if index.ndim != 1 or (index.size and index.dtype.kind not in "iu"):
        raise UnknownTask("state: tasks must be a list of task indices")
    bad = index[(index < 0) | (index >= size)]
    if bad.size:
        raise UnknownTask(f"state: unknown task index {int(bad[0])} (tasks are 0 … {size - 1})")
    return index.astype(np.int64)


def check_groups(host: Reported, groups: list[tuple[int, Iterable[float]]]) -> list[tuple[int, list[float]]]:
    """Every group's task index and rewards, checked together: a task reported more often than it has
    groups waiting is a duplicate even within one call."""
    low, high = host.reward_range
    size = host.size
    waiting: dict[int, int] = {}
    checked = []
    for given, rewards in groups:
        if isinstance(given, bool) or not isinstance(given, int | np.integer) or not 0 <= given < size:
            raise UnknownTask(f"report: unknown task index {given!r} (tasks are 0 … {size - 1})")
        task = int(given)
        try:
            items = list(rewards)
            values = [float(r) for r in items if not isinstance(r, bool | str | bytes)]
        except (TypeError, ValueError):
            raise BadReward(f"report: task {task}: rewards must be a list of numbers") from None
        if not values or len(values) != len(items):
            raise BadReward(f"report: task {task}: rewards must be a non-empty list of numbers")
        for value in values:
            if not math.isfinite(value):
                raise BadReward(f"report: task {task}: reward {value} is not a finite number")
            if not low <= value <= high:
                raise BadReward(
                    f"report: task {task}: reward {value} is outside the declared range [{low}, {high}]"
                )
        left = waiting.get(task, host.waiting(task))
        if left < 1:
            raise DuplicateReport(
                f"report: task {task} has no served group waiting for rewards "
                "(reported twice, or never served)"
            )
        waiting[task] = left - 1
        checked.append((task, values))
    return checked


def check_counts(
    passes: npt.ArrayLike | None, failures: npt.ArrayLike | None, size: int
) -> tuple[FloatArray, FloatArray]:
    """A cold start's passes and failures: one finite count ≥ 0 per task."""
    s = np.asarray(passes if passes is not None else np.zeros(size), dtype=np.float64)
    f = np.asarray(failures if failures is not None else np.zeros(size), dtype=np.float64)
    if s.shape != (size,) or f.shape != (size,):
        raise UsageError(f"curriculum: passes and failures need one entry per task ({size})")
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(f)) and s.min() >= 0 and f.min() >= 0):
        raise UsageError("curriculum: passes and failures must be finite counts ≥ 0")
    return s, f


def fingerprint(rows: Sequence[Mapping[str, Any]] | int, size: int) -> str:
    """A cheap identity of the dataset: its size and its first and last rows."""
    if isinstance(rows, int):
        sample: list[Any] = []
    else:
        sample = [rows[i] for i in sorted({*range(min(4, size)), *range(max(0, size - 4), size)})]
    text = json.dumps([size, sample], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]
