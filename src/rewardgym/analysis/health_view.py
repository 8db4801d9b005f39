"""What the health checks found, at every level, as the CLI prints it and the report shows it (pure).

One source for both: :func:`health_view` counts from the :class:`~rewardgym.analysis.health.Health` the
quality summary is written from — :func:`issue_counts` is the summary's ``run.issues`` — so the page can
never say "nothing found" while the CLI reports unhealthy rollouts. Three levels:

- **rollouts**: how many lines were checked and how many got an unhealthy verdict, and per rollout check
  how many it flagged (a verdict is per rollout: one cut-off reply makes its rollout unhealthy even when
  too few are cut off for a dataset finding);
- **tasks**: how many tasks carry a task flag (per task check) and how many have an unhealthy rollout;
- **dataset**: the findings (a check over a threshold share), which decide the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rewardgym.analysis.check_ids import ALL_CHECKS, NEMO_ONLY_CHECKS, ROLLOUT_CHECKS, TASK_CHECKS
from rewardgym.analysis.columns import RolloutColumns
from rewardgym.analysis.health_types import Health


def issue_counts(health: Health, unreadable: int) -> dict[str, int]:
    """Per check, the rollouts (rollout checks) or tasks (task checks) it flagged: ``run.issues``."""
    issues = dict.fromkeys((*ALL_CHECKS, *NEMO_ONLY_CHECKS), 0)
    for check in ROLLOUT_CHECKS:
        issues[check] = int(np.count_nonzero(health.rollout_flags[check]))
    issues["record_unreadable"] = unreadable
    for checks in health.trajectory.rows.values():  # NeMo Gym counts findings
        for finding in checks.findings:
            issues[finding["check"]] += 1
    for check in TASK_CHECKS:
        issues[check] = int(np.count_nonzero(health.task_flags[check]))
    issues["task_no_successful_model_calls"] += int(health.failure_tasks.shape[0])
    issues["task_not_collected"] = int(health.uncollected_tasks.shape[0])
    issues["collection_failures"] = next(
        (f.count for f in health.findings if f.check == "collection_failures"), 0
    )
    return issues


@dataclass(frozen=True)
class HealthView:
    """The counts of the module docstring."""

    records: int
    unhealthy_rollouts: int
    rollout_issues: list[tuple[str, int]]
    """Rollout checks that flagged something, with their counts (check order)."""
    tasks: int
    tasks_flagged: int
    """Tasks with at least one task flag."""
    tasks_with_unhealthy_rollouts: int
    task_issues: list[tuple[str, int]]
    verdict: str
    findings: list[dict[str, Any]]


def health_view(columns: RolloutColumns, health: Health, unreadable: int) -> HealthView:
    """Every level's counts (see module doc)."""
    issues = issue_counts(health, unreadable)
    bad = health.unhealthy
    flagged = np.zeros(health.task_ids.shape[0], np.bool_)
    for check in TASK_CHECKS:
        flagged |= health.task_flags[check]
    sick_tasks = 0
    if len(columns):
        starts = np.flatnonzero(np.concatenate(([True], columns.task[1:] != columns.task[:-1])))
        sick_tasks = int(np.count_nonzero(np.add.reduceat(bad.astype(np.int64), starts)))
    failure_only = int(health.failure_tasks.shape[0])  # flagged task_no_successful_model_calls
    return HealthView(
        records=len(columns) + unreadable,
        unhealthy_rollouts=int(np.count_nonzero(bad)) + unreadable,
        rollout_issues=[
            (c, issues[c]) for c in ("record_unreadable", *ROLLOUT_CHECKS, *NEMO_ONLY_CHECKS) if issues[c]
        ],
        tasks=int(health.task_ids.shape[0]) + failure_only,
        tasks_flagged=int(np.count_nonzero(flagged)) + failure_only,
        tasks_with_unhealthy_rollouts=sick_tasks,
        task_issues=[(c, issues[c]) for c in TASK_CHECKS if issues[c]],
        verdict=health.verdict,
        findings=[f.as_dict() for f in health.findings],
    )


def _listed(issues: list[tuple[str, int]]) -> str:
    return ", ".join(f"{check} {count:,}" for check, count in issues)


def view_lines(view: HealthView) -> list[str]:
    """The rollout- and task-level lines the CLI prints after the verdict's findings."""
    lines = []
    if view.rollout_issues:
        lines.append(
            f"Unhealthy rollouts: {view.unhealthy_rollouts:,} of {view.records:,} "
            f"({_listed(view.rollout_issues)})"
        )
    if view.tasks_flagged or view.tasks_with_unhealthy_rollouts:
        flags = f" ({_listed(view.task_issues)})" if view.task_issues else ""
        lines.append(
            f"Tasks: {view.tasks_flagged:,} of {view.tasks:,} flagged{flags}; "
            f"{view.tasks_with_unhealthy_rollouts:,} with an unhealthy rollout"
        )
    return lines
