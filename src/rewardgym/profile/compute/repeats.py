"""Repeat-level metrics and the across-repeat aggregates of NeMo Gym 0.7.0 (docs/reference/profile.md §6, §7).

Contract:

- :func:`repeat_level_metrics` returns one entry per (agent label, rollout index), for labels whose rows
  cover more than one rollout index, ordered by label then rollout index. Keys: ``agent_ref``,
  ``_ng_rollout_index``, ``sample_count`` (tasks in the repeat), ``missing_count`` (the label's tasks
  minus ``sample_count``), then for each field in lexicographic order ``mean/ median/ std/ sem/ min/
  max/ p25/ p75/`` and, when n > 1, ``ci_low_95/ ci_high_95/`` (Student-t). A field with no value in a
  repeat is skipped there. When some repeat misses tasks, one ``UserWarning`` says so.
- :func:`across_repeat_metrics` treats each repeat's primary metrics (in practice ``mean/<field>``) as
  observations and returns, per label, ``mean_ median_ std_ min_ max_ se_across_repeats/<m>`` and the
  t-interval ``ci_low_95_/ci_high_95_across_repeats/<m>`` when there are two or more repeats.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from rewardgym.profile.compute.kernels import series_stats
from rewardgym.profile.read.columns import RolloutTable
from rewardgym.protocol.keys import ATTEMPT_INDEX, ROLLOUT_INDEX, TASK_INDEX
from rewardgym.stats.tinterval import t_interval

_EXCLUDED_NAMES = frozenset(
    (
        TASK_INDEX,
        ROLLOUT_INDEX,
        ATTEMPT_INDEX,
        "sample_count",
        "missing_count",
        "num_repeats",
        "token_usage_version",
    )
)
_EXCLUDED_PREFIXES = (
    "max/",
    "min/",
    "median/",
    "std/",
    "sem/",
    "se/",
    "p25/",
    "p75/",
    "ci_low_95/",
    "ci_high_95/",
    "histogram/",
)
_EXCLUDED_SUFFIXES = (
    "/max",
    "/min",
    "/median",
    "/p5",
    "/p25",
    "/p75",
    "/p95",
    "/ci_low_95",
    "/ci_high_95",
    "/ci_lower",
    "/ci_upper",
    "_ci_lower",
    "_ci_upper",
    "_ci95_lower",
    "_ci95_upper",
    "/_ng_attempt_index",
    "/std_dev_across_runs",
    "/std_err_across_runs",
    "/avg_sample_std_dev",
)

MISSING_REPEATS_WARNING = (
    "{count} repeat(s) are missing rollouts for some tasks (e.g. agent={agent!r}, "
    "_ng_rollout_index={rollout}, missing_count={missing}). repeat_level_metrics statistics were computed "
    "from unequal sample sizes across repeats and may not be directly comparable, and agent_level_metrics "
    "may be biased toward whichever tasks happened to complete. Consider obtaining the missing rollouts "
    "before drawing conclusions from these metrics."
)


def is_primary_metric(name: str) -> bool:
    """Whether a repeat-level column is aggregated across repeats (NeMo Gym's primary-metric filter)."""
    return not (
        name in _EXCLUDED_NAMES
        or name.startswith(_EXCLUDED_PREFIXES)
        or name.endswith(_EXCLUDED_SUFFIXES)
        or "_across_repeats/" in name
    )


def _ci_keys(
    entry: dict[str, Any], suffix: str, mean: float, sem: float, n: int, low: str, high: str
) -> None:
    interval = t_interval(mean, sem, n)
    if interval is not None:
        entry[f"{low}/{suffix}"] = interval[0]
        entry[f"{high}/{suffix}"] = interval[1]


def repeat_level_metrics(table: RolloutTable) -> list[dict[str, Any]]:
    """Per-(label, rollout index) statistics (see module doc)."""
    has_label = table.label >= 0
    labelled = np.flatnonzero(has_label)
    if len(labelled) == 0:
        return []
    order = labelled[np.lexsort((table.rollout[labelled], table.label[labelled]))]
    labels = table.label[order]
    columns = sorted(range(len(table.fields)), key=lambda i: table.fields[i])
    entries: list[dict[str, Any]] = []
    label_bounds = np.flatnonzero(np.diff(labels)) + 1
    for rows in np.split(order, label_bounds):
        label = int(table.label[rows[0]])
        repeat_ids = table.rollout[rows]
        cuts = np.flatnonzero(np.diff(repeat_ids)) + 1
        if len(cuts) == 0:
            continue  # a single repeat: no repeat-level entries for this agent
        tasks = np.sort(table.task[rows])
        total_tasks = int(len(tasks) > 0) + int(np.count_nonzero(tasks[1:] != tasks[:-1]))
        for repeat_rows in np.split(rows, cuts):
            present = len(repeat_rows)  # keys are unique, so the tasks of one repeat are distinct
            entry: dict[str, Any] = {
                "agent_ref": {"name": table.labels[label]},
                ROLLOUT_INDEX: int(table.rollout[repeat_rows[0]]),
                "sample_count": present,
                "missing_count": total_tasks - present,
            }
            for column in columns:
                values = table.values[column, repeat_rows]
                values = values[~np.isnan(values)]
                if len(values) == 0:
                    continue
                name = table.fields[column]
                s = series_stats(values)
                entry[f"mean/{name}"] = s.mean
                entry[f"median/{name}"] = s.median
                entry[f"std/{name}"] = s.std
                entry[f"sem/{name}"] = s.sem
                entry[f"min/{name}"] = s.min
                entry[f"max/{name}"] = s.max
                entry[f"p25/{name}"] = s.p25
                entry[f"p75/{name}"] = s.p75
                _ci_keys(entry, name, s.mean, s.sem, s.n, "ci_low_95", "ci_high_95")
            entries.append(entry)
    incomplete = [entry for entry in entries if entry["missing_count"] > 0]
    if incomplete:
        first = incomplete[0]
        warnings.warn(
            MISSING_REPEATS_WARNING.format(
                count=len(incomplete),
                agent=first["agent_ref"]["name"],
                rollout=first[ROLLOUT_INDEX],
                missing=first["missing_count"],
            ),
            UserWarning,
            stacklevel=2,
        )
    return entries


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def across_repeat_metrics(entries: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per label: statistics of each primary repeat-level metric across that label's repeats."""
    columns: dict[str, None] = {}
    for entry in entries:
        for name, value in entry.items():
            if _is_number(value) and is_primary_metric(name):
                columns.setdefault(name)
    by_label: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        by_label.setdefault(entry["agent_ref"]["name"], []).append(entry)
    result: dict[str, dict[str, float]] = {}
    for label, group in by_label.items():
        aggregate: dict[str, float] = {}
        for column in columns:
            observed = [float(e[column]) for e in group if _is_number(e.get(column))]
            observed = [v for v in observed if not math.isnan(v)]
            if not observed:
                continue
            s = series_stats(np.array(observed, dtype=np.float64))
            aggregate[f"mean_across_repeats/{column}"] = s.mean
            aggregate[f"median_across_repeats/{column}"] = s.median
            aggregate[f"std_across_repeats/{column}"] = s.std
            aggregate[f"min_across_repeats/{column}"] = s.min
            aggregate[f"max_across_repeats/{column}"] = s.max
            aggregate[f"se_across_repeats/{column}"] = s.sem
            _ci_keys(
                aggregate, column, s.mean, s.sem, s.n, "ci_low_95_across_repeats", "ci_high_95_across_repeats"
            )
        result[label] = aggregate
    return result
