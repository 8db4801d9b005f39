"""The health check's result types: a dataset :class:`Finding` and the whole :class:`Health` of a run.

Kept apart from :mod:`.findings` (which computes findings from a :class:`Health`'s flags) and :mod:`.health`
(which computes the flags and collects the findings), so neither of those imports the other's types back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rewardgym.analysis.trajectory_evidence import TrajectoryEvidence
from rewardgym.stats.arrays import BoolArray, IntArray


@dataclass(frozen=True)
class Finding:
    """One dataset-level health verdict."""

    check: str
    severity: str
    count: int
    of: int
    unit: str
    evidence: str
    fix: str
    examples: list[tuple[int, int | None]] = field(default_factory=list)
    """(task, rollout) keys; rollout None for a task-level finding."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "severity": self.severity,
            "count": self.count,
            "of": self.of,
            "unit": self.unit,
            "share": self.count / self.of if self.of else None,
            "evidence": self.evidence,
            "fix": self.fix,
            "examples": [{"_ng_task_index": t, "_ng_rollout_index": r} for t, r in self.examples],
        }


@dataclass(frozen=True)
class Health:
    """Per-rollout flags, per-task flags and the dataset findings."""

    rollout_flags: dict[str, BoolArray]
    """Rollout check id → flag per column row."""
    duplicate_count: IntArray
    """Lines sharing the row's (task, rollout)."""
    task_ids: IntArray
    task_flags: dict[str, BoolArray]
    """Task check id → flag per task of ``task_ids``."""
    failure_tasks: IntArray
    """Tasks that appear only in the failures sidecar."""
    uncollected_tasks: IntArray
    """Tasks of the materialized inputs with neither a rollout line nor a failure record."""
    findings: list[Finding]
    unreadable: int
    ignored: tuple[str, ...] = ()
    """The check ids that did not run, sorted."""
    trajectory: TrajectoryEvidence = field(default_factory=TrajectoryEvidence)
    """The trajectory checks of the lines that carry ``ng_trajectory``."""

    @property
    def unhealthy(self) -> BoolArray:
        flags = list(self.rollout_flags.values())
        out = np.zeros(flags[0].shape[0], np.bool_) if flags else np.zeros(0, np.bool_)
        for flag in flags:
            out |= flag
        return out | self.trajectory.unhealthy(out.shape[0])

    def unobserved_rows(self, unhealthy: BoolArray) -> BoolArray:
        """Rows whose verdict is ``unobserved`` (not unhealthy, and a trajectory check was unobserved)."""
        return unobserved_rows(self.trajectory, self.ignored, unhealthy)

    @property
    def verdict(self) -> str:
        severities = {f.severity for f in self.findings}
        return "unhealthy" if "error" in severities else "warnings" if severities else "healthy"


def unobserved_rows(
    trajectory: TrajectoryEvidence, ignored: tuple[str, ...], unhealthy: BoolArray
) -> BoolArray:
    """Rows whose verdict is ``unobserved``: not unhealthy, and a trajectory check was unobserved (on a line
    without a trajectory: any trajectory check not ignored)."""
    default = bool(trajectory.unobserved(-1, ignored))
    out = np.full(unhealthy.shape[0], default, np.bool_)
    for i, checks in trajectory.rows.items():
        out[i] = bool(checks.unobserved)
    return out & ~unhealthy
