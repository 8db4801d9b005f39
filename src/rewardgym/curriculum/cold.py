"""Cold start: each task's passes and failures from a profile or from the rollouts of ``gym eval run``.

Contract: :func:`counts_from_profile` reads ``<stem>_reward_profiling.jsonl`` (one row per task, or per
(task, agent) with fan-out — summed), each rollout's ``reward`` from ``rollout_infos``;
:func:`counts_from_rollouts` reads a run's rollouts file (one row per rollout: ``_ng_task_index`` and
``reward``). A reward ≥ ``pass_threshold`` passes. Both return ``(passes, failures)`` arrays with one entry
per task of the dataset; a task index outside it, a missing or non-numeric reward is a
:class:`~rewardgym.errors.DataError` naming the file and line. Tasks the file does not mention get 0 / 0
(the prior alone).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from rewardgym.errors import DataError
from rewardgym.io.jsonl import iter_jsonl
from rewardgym.stats.arrays import FloatArray


def _task(row: dict[str, Any], size: int, where: str) -> int:
    task = row.get("_ng_task_index")
    if isinstance(task, bool) or not isinstance(task, int):
        raise DataError(f"{where}: '_ng_task_index' must be an integer, got {task!r}")
    if not 0 <= task < size:
        raise DataError(f"{where}: task {task} is not a row of the dataset (it has {size} rows)")
    return task


def _reward(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DataError(f"{where}: 'reward' must be a finite number, got {value!r}")
    return float(value)


def counts_from_rollouts(path: Path, size: int, pass_threshold: float) -> tuple[FloatArray, FloatArray]:
    """Passes and failures per task from a run's rollouts file (module doc)."""
    passes, failures = np.zeros(size), np.zeros(size)
    for number, row in iter_jsonl(path, what="Rollouts file"):
        where = f"{path}:{number}"
        task = _task(row, size, where)
        if _reward(row.get("reward"), where) >= pass_threshold:
            passes[task] += 1
        else:
            failures[task] += 1
    return passes, failures


def counts_from_profile(path: Path, size: int, pass_threshold: float) -> tuple[FloatArray, FloatArray]:
    """Passes and failures per task from a reward profile (module doc)."""
    passes, failures = np.zeros(size), np.zeros(size)
    for number, row in iter_jsonl(path, what="Profile"):
        where = f"{path}:{number}"
        task = _task(row, size, where)
        infos = row.get("rollout_infos")
        if not isinstance(infos, list):
            raise DataError(f"{where}: no 'rollout_infos' list (is this a *_reward_profiling.jsonl file?)")
        for info in infos:
            reward = _reward(info.get("reward") if isinstance(info, dict) else None, where)
            if reward >= pass_threshold:
                passes[task] += 1
            else:
                failures[task] += 1
    return passes, failures
