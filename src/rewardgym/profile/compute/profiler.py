"""From the columns of both files to a complete profile (NeMo Gym 0.7.0 processing order).

Contract of :func:`build_profile`:

1. align all input rows and results (duplicate / extra / missing checks, see :mod:`.align`);
2. the completion summary over everything (masked results count as completed);
3. the measured subset: results that are not masked, and the input rows without a masked result;
4. agent labels and fan-out (see :mod:`.grouping`), the measured table and its statistics;
5. per task group: the ``sample`` row (lowest rollout index), ``num_rollouts`` and
   ``expected_num_rollouts`` (measured input rows of the task, or of the (task, label) with fan-out);
6. the agent entries: base statistics, across-repeat aggregates, then — for agents with a masked
   result — the ``coverage/*`` keys, or a coverage-only entry at the end.

Steps 1–5 alone are :func:`prepare_profile` (a :class:`TaskProfile`: all the per-task lines need), step 6
is :func:`finish_profile`, so the per-task file can be written while step 6 runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rewardgym.profile.compute.align import (
    CompletionSummary,
    align,
    completion_summary,
    encode_keys,
    run_starts,
)
from rewardgym.profile.compute.grouping import is_fan_out, label_index, row_labels, run_labels
from rewardgym.profile.compute.statistics import (
    ProfileStatistics,
    TaskStatistics,
    compute_statistics,
    stat_items,
    stat_keys,
    stat_matrix,
    task_statistics,
)
from rewardgym.profile.read.columns import InputColumns, ResultColumns, measured_table

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class TaskProfile:
    """Steps 1–5 of :func:`build_profile`: everything the per-task lines need."""

    statistics: TaskStatistics
    completion: CompletionSummary
    masked_rollouts: int
    """Masked results in the whole rollouts file."""
    result_of_row: IntArray
    """Result row (in :class:`ResultColumns`) of each measured table row."""
    input_of_row: IntArray
    """Input row (in :class:`InputColumns`) of each measured table row."""
    sample_input: IntArray
    """Per task group: the input row used as ``sample``."""
    expected: IntArray
    """Per task group: ``expected_num_rollouts``."""
    coverage: dict[str, dict[str, int]]
    """``coverage/*`` per agent name with a masked result."""

    @property
    def task_groups(self) -> int:
        return len(self.statistics.tasks)


@dataclass(frozen=True)
class Profile:
    """Everything computed for one profiling run, ready to be written."""

    part: TaskProfile
    """The per-task part (see :func:`prepare_profile`)."""
    statistics: ProfileStatistics
    agent_metrics: list[dict[str, Any]]
    """The agent-level entries, as written to ``<stem>_agent_metrics.json``."""

    @property
    def completion(self) -> CompletionSummary:
        return self.part.completion

    @property
    def masked_rollouts(self) -> int:
        """Masked results in the whole rollouts file."""
        return self.part.masked_rollouts

    @property
    def repeat_level_metrics(self) -> list[dict[str, Any]]:
        return self.statistics.repeat_level

    @property
    def task_groups(self) -> int:
        return len(self.statistics.tasks)


def _distinct_sorted(values: IntArray) -> int:
    """Distinct values in a sorted array."""
    return int(len(values) > 0) + int(np.count_nonzero(values[1:] != values[:-1]))


def _expected_per_group(
    stats: TaskStatistics, inputs: InputColumns, measured_sorted: IntArray, input_label: IntArray
) -> IntArray:
    """``expected_num_rollouts`` per task group: measured input rows of its task (or (task, label))."""
    groups = len(stats.tasks)
    if groups == 0:
        return np.zeros(0, np.int64)
    if stats.fan_out:
        row_keys, group_keys = encode_keys(
            [inputs.task[measured_sorted], stats.task_of_group],
            [input_label[measured_sorted] + 1, stats.label_of_group + 1],
        )
        row_keys = np.sort(row_keys)
    else:
        row_keys, group_keys = inputs.task[measured_sorted], stats.task_of_group
    starts = run_starts(row_keys)
    counts = np.diff(np.append(starts, len(row_keys)))
    return counts[np.searchsorted(row_keys[starts], group_keys)].astype(np.int64)


def _coverage(
    inputs: InputColumns, results: ResultColumns, result_rows: IntArray, input_rows: IntArray
) -> dict[str, dict[str, int]]:
    """``coverage/*`` per agent name with a masked result (results in key order)."""
    agent = inputs.agent[input_rows]
    masked = results.masked[result_rows]
    if not masked.any():
        return {}
    task = results.task[result_rows]
    coverage: dict[str, dict[str, int]] = {}
    for agent_id in (np.flatnonzero(np.bincount(agent[masked] + 1)) - 1).tolist():
        if agent_id < 0:
            continue
        mine = agent == agent_id
        measured = mine & ~masked
        measured_tasks = _distinct_sorted(task[measured])
        coverage[inputs.names[agent_id]] = {
            "coverage/measured_rollouts": int(measured.sum()),
            "coverage/masked_rollouts": int((mine & masked).sum()),
            "coverage/measured_tasks": measured_tasks,
            "coverage/fully_masked_tasks": _distinct_sorted(task[mine]) - measured_tasks,
        }
    return coverage


def _agent_metrics(stats: ProfileStatistics, coverage: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    keys = stat_keys(stats.fields)
    entries: list[dict[str, Any]] = []
    labels = [stats.table.labels[i] for i in stats.agent_of_group.tolist()]
    for label, items in zip(labels, stat_items(keys, stat_matrix(stats.agents.stats)), strict=True):
        entry: dict[str, Any] = dict(items)
        entry["agent_ref"] = {"name": label}
        entry.update(stats.across_repeats.get(label, {}))
        entry.update(coverage.pop(label, {}))
        entries.append(entry)
    for name in sorted(coverage):
        entries.append({"agent_ref": {"name": name}, **coverage[name]})
    return entries


def prepare_profile(
    inputs: InputColumns,
    results: ResultColumns,
    *,
    inputs_path: str,
    results_path: str,
    allow_partial: bool,
    threads: int = 1,
) -> TaskProfile:
    """Steps 1–5 of :func:`build_profile` (see module doc): align, select, group and describe the tasks
    (the descriptions with ``threads`` threads)."""
    alignment = align(
        (inputs.task, inputs.rollout, inputs.line),
        (results.task, results.rollout, results.line),
        inputs_path=inputs_path,
        results_path=results_path,
        allow_partial=allow_partial,
    )
    completion = completion_summary(
        inputs.task, inputs.run_key, alignment.input_matched, alignment.input_order
    )
    sorted_masked = results.masked[alignment.results]
    measured = ~sorted_masked
    result_of_row = alignment.results[measured]
    input_of_row = alignment.inputs[measured]
    measured_input = np.ones(len(inputs.task), dtype=np.bool_)
    measured_input[alignment.inputs[sorted_masked]] = False
    measured_sorted = alignment.input_order[measured_input[alignment.input_order]]

    labels_by_key = run_labels(inputs.run_key, inputs.agent, inputs.names)
    labels, key_to_label = label_index(labels_by_key)
    input_label = row_labels(inputs.run_key, key_to_label)
    fan_out = is_fan_out(inputs.task[measured_sorted], input_label[measured_sorted])

    table = measured_table(results, result_of_row, input_label[input_of_row], labels, threads)
    stats = task_statistics(table, fan_out, threads)
    first_rows = stats.tasks.rows[stats.tasks.starts] if len(stats.tasks) else np.zeros(0, np.int64)
    return TaskProfile(
        statistics=stats,
        completion=completion,
        masked_rollouts=int(results.masked.sum()),
        result_of_row=result_of_row,
        input_of_row=input_of_row,
        sample_input=input_of_row[first_rows],
        expected=_expected_per_group(stats, inputs, measured_sorted, input_label),
        coverage=_coverage(inputs, results, alignment.results, alignment.inputs),
    )


def finish_profile(part: TaskProfile) -> Profile:
    """Step 6 of :func:`build_profile`: the agent and repeat statistics and the agent entries."""
    stats = compute_statistics(part.statistics.table, part.statistics.fan_out, part.statistics)
    return Profile(part=part, statistics=stats, agent_metrics=_agent_metrics(stats, dict(part.coverage)))


def build_profile(
    inputs: InputColumns,
    results: ResultColumns,
    *,
    inputs_path: str,
    results_path: str,
    allow_partial: bool,
) -> Profile:
    """Align, select the measured subset and compute every statistic (see module doc)."""
    return finish_profile(
        prepare_profile(
            inputs, results, inputs_path=inputs_path, results_path=results_path, allow_partial=allow_partial
        )
    )
