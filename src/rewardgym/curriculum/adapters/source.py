"""What a trainer adapter needs of a curriculum, and per-completion rewards turned into per-group reports.

Contract:

- :class:`BatchSource` — ``next_batch(n, group_size)`` → rows carrying ``_ng_task_index``;
  :class:`GroupReporter` — ``report_groups([(task_index, rewards), …])``, all checked before any is applied.
  :class:`rewardgym.curriculum.Curriculum` is both; so is anything that speaks the same two calls.
- :func:`draw_tasks` asks for exactly ``n`` task indices (a policy may answer fewer than asked, e.g. when
  the dataset is smaller than the batch: the rest is asked again, each call one step of the curriculum).
- Trainers hand rewards back flat, one per completion. :func:`groups_by_id` groups them by a group id
  (veRL's ``uid``: one per prompt copy); :func:`groups_in_runs` cuts consecutive runs of ``group_size``
  (TRL: a prompt's completions are adjacent). A group whose completions disagree on the task index, a
  batch that does not divide into groups, or a task index that is not an integer is a
  :class:`~rewardgym.errors.DataError` naming what is wrong — nothing is reported then.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any, Protocol

from rewardgym.errors import DataError, UsageError

Group = tuple[int, list[float]]


class BatchSource(Protocol):
    """Serves the next prompts."""

    def next_batch(self, n: int, group_size: int | None = None) -> list[dict[str, Any]]: ...


class GroupReporter(Protocol):
    """Takes the rewards of served groups."""

    def report_groups(self, groups: Iterable[tuple[int, Iterable[float]]]) -> list[bool]: ...


def draw_tasks(source: BatchSource, n: int, group_size: int | None = None) -> list[int]:
    """Exactly ``n`` task indices from ``source`` (several calls when one answers fewer)."""
    tasks: list[int] = []
    while len(tasks) < n:
        rows = source.next_batch(n - len(tasks), group_size)
        if not rows:
            raise DataError("curriculum: next_batch returned no rows (is the dataset empty?)")
        tasks.extend(task_index(row.get("_ng_task_index"), "_ng_task_index") for row in rows)
    return tasks


def task_index(value: Any, field: str) -> int:
    """``value`` as a task index (a Python, numpy or one-element tensor integer); else a DataError."""
    item = value.item() if hasattr(value, "item") else value
    if isinstance(item, bool) or not isinstance(item, int):
        raise DataError(f"curriculum: {field} must be an integer task index, got {value!r}")
    return item


def groups_by_id(
    tasks: Sequence[Any], rewards: Sequence[float], ids: Sequence[Hashable], field: str
) -> list[Group]:
    """One group per distinct id, in order of first appearance; ``field`` names the task column in errors."""
    if not len(tasks) == len(rewards) == len(ids):
        raise DataError(
            f"curriculum: {len(tasks)} task indices, {len(rewards)} rewards and {len(ids)} group ids differ"
        )
    found: dict[Hashable, Group] = {}
    for raw, reward, key in zip(tasks, rewards, ids, strict=True):
        task = task_index(raw, field)
        group = found.setdefault(key, (task, []))
        if group[0] != task:
            raise DataError(
                f"curriculum: group {key!r} mixes task indices {group[0]} and {task} (column {field!r})"
            )
        group[1].append(float(reward))
    return list(found.values())


def groups_in_runs(
    tasks: Sequence[Any], rewards: Sequence[float], group_size: int, field: str
) -> list[Group]:
    """Consecutive runs of ``group_size`` completions, each of one task."""
    if group_size < 1:
        raise UsageError(f"curriculum: group_size must be ≥ 1, got {group_size}")
    if len(tasks) != len(rewards) or len(tasks) % group_size:
        raise DataError(
            f"curriculum: {len(rewards)} rewards for {len(tasks)} completions "
            f"do not make groups of {group_size}"
        )
    groups: list[Group] = []
    for start in range(0, len(tasks), group_size):
        run = [task_index(raw, field) for raw in tasks[start : start + group_size]]
        if len(set(run)) > 1:
            raise DataError(
                f"curriculum: completions {start}…{start + group_size - 1} mix task indices "
                f"{sorted(set(run))} (column {field!r}; a prompt's {group_size} completions must be adjacent)"
            )
        groups.append((run[0], [float(r) for r in rewards[start : start + group_size]]))
    return groups
