"""Aggregate metrics of verify responses: the per-task/agent statistics baseline, merged with an
environment's own metrics (pure functions, no I/O).

Used by ``POST /aggregate_metrics`` of resources servers and reusable by the collector and the profiler.

- :func:`compute_aggregate_metrics` groups verify responses by ``_ng_task_index`` (sorted; rollouts by
  ``_ng_rollout_index``), runs a *profile function* for the statistics baseline, merges an environment's
  ``compute_metrics(tasks)`` (its optional ``per_task_metrics`` list goes into the group rows) and selects
  ``key_metrics`` (default: every ``mean/*`` entry, :mod:`rewardgym.metrics.key_metrics`).

Profiler hook: :data:`ProfileFn` is the signature of the baseline statistics. The default of resources
servers, :func:`profiler_profile`, is the profiler's own statistics (``rewardgym.profile``, a pure library
over the protocol and I/O layers, imported lazily); :func:`basic_profile` computes ``mean/max/min/median/std``
without it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rewardgym.metrics.key_metrics import default_key_metrics
from rewardgym.protocol import AggregateMetrics, keys

Task = tuple[int, list[dict[str, Any]]]

ProfileFn = Callable[[Sequence[Task]], tuple[dict[str, Any], list[dict[str, Any]]]]
"""(tasks as (task_index, rollouts)) → (agent-level statistics, one statistics row per task)."""


def _numeric_fields(row: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in row.items():
        if key.startswith("_ng_") or key == keys.AGENT_REF:
            continue
        if isinstance(value, bool | int | float) and not (isinstance(value, float) and math.isnan(value)):
            out[key] = float(value)
    response = row.get(keys.RESPONSE)
    usage = response.get("usage") if isinstance(response, Mapping) else None
    if isinstance(usage, Mapping):
        for key, value in usage.items():
            if isinstance(value, bool | int | float):
                out[key] = float(value)
    return out


def describe(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``mean/max/min/median/std`` (stat-major keys) of the numeric fields of ``rows``."""
    columns: dict[str, list[float]] = {}
    for row in rows:
        for key, value in _numeric_fields(row).items():
            columns.setdefault(key, []).append(value)
    stats: dict[str, float] = {}
    for stat in ("mean", "max", "min", "median", "std"):
        for key, values in columns.items():
            if stat == "mean":
                stats[f"mean/{key}"] = statistics.fmean(values)
            elif stat == "max":
                stats[f"max/{key}"] = max(values)
            elif stat == "min":
                stats[f"min/{key}"] = min(values)
            elif stat == "median":
                stats[f"median/{key}"] = float(statistics.median(values))
            else:
                stats[f"std/{key}"] = statistics.stdev(values) if len(values) > 1 else 0.0
    return stats


def basic_profile(tasks: Sequence[Task]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The default :data:`ProfileFn`: statistics over all rollouts, and per task."""
    all_rows = [row for _, rollouts in tasks for row in rollouts]
    groups = [
        {keys.TASK_INDEX: index, "num_rollouts": len(rollouts), **describe(rollouts)}
        for index, rollouts in tasks
    ]
    return describe(all_rows), groups


def profiler_profile(tasks: Sequence[Task]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The :data:`ProfileFn` of NeMo Gym's aggregate metrics: ``gym eval profile``'s own statistics.

    The rollouts are profiled as one agent (NeMo Gym's synthetic ``{"name": "agent"}`` rows): the
    agent-level entry (with the across-repeat aggregates) becomes ``agent_metrics`` and the per-task
    profile rows become ``group_level_metrics``. The profiler only depends on the protocol and I/O layers,
    so it is imported here lazily (numpy) rather than duplicated.
    """
    import warnings

    from rewardgym.profile import profile_results

    results = [
        {keys.TASK_INDEX: index, keys.ROLLOUT_INDEX: position, **row}
        for index, rollouts in tasks
        for position, row in enumerate(rollouts)
    ]
    with warnings.catch_warnings():  # "sem is 0" notes are for the profile CLI, not a server log
        warnings.simplefilter("ignore", UserWarning)
        profiled = profile_results(results)
    agent = dict(profiled.agent_metrics[0]) if profiled.agent_metrics else {}
    agent.pop(keys.AGENT_REF, None)
    return agent, [dict(row) for row in profiled.task_rows]


def group_by_task(verify_responses: Sequence[Mapping[str, Any]]) -> list[Task]:
    """Rollouts grouped by ``_ng_task_index`` (position when absent), sorted, rollouts in rollout order."""
    grouped: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    for position, row in enumerate(verify_responses):
        task = row.get(keys.TASK_INDEX, position)
        rollout = row.get(keys.ROLLOUT_INDEX, position)
        grouped.setdefault(int(task), []).append((int(rollout), dict(row)))
    return [
        (task, [row for _, row in sorted(rows, key=lambda p: p[0])]) for task, rows in sorted(grouped.items())
    ]


def compute_aggregate_metrics(
    verify_responses: Sequence[Mapping[str, Any]],
    *,
    compute_metrics: Callable[[list[list[dict[str, Any]]]], Mapping[str, Any]] | None = None,
    key_metrics: Callable[[Mapping[str, Any]], Mapping[str, Any]] = default_key_metrics,
    profile: ProfileFn = basic_profile,
) -> AggregateMetrics:
    """Agent metrics, per-task rows and key metrics of a list of verify responses (module docstring)."""
    tasks = group_by_task(verify_responses)
    agent_metrics, group_rows = profile(tasks)
    agent_metrics = {k: v for k, v in agent_metrics.items() if not k.startswith("histogram")}
    agent_metrics.pop(keys.AGENT_REF, None)
    if compute_metrics is not None:
        extra = dict(compute_metrics([rollouts for _, rollouts in tasks]))
        per_task = extra.pop("per_task_metrics", None)
        agent_metrics.update(extra)
        if isinstance(per_task, list):
            for row, task_metrics in zip(group_rows, per_task, strict=False):
                if isinstance(task_metrics, Mapping):
                    row.update(task_metrics)
    return AggregateMetrics(
        group_level_metrics=group_rows,
        agent_metrics=agent_metrics,
        key_metrics=dict(key_metrics(agent_metrics)),
    )
