"""The trajectory checks of a rollouts file: which lines carry ``ng_trajectory`` and what the checks found.

Contract of :func:`read_trajectory_evidence`: one pass over the file's bytes looks for ``"ng_trajectory"``;
a file without it (every run with capture off) costs that search alone, and every line is unobserved by the
trajectory checks. Otherwise each line holding the string (found by the columns' byte offsets) is parsed
and checked (:func:`rewardgym.analysis.trajectory_checks.evaluate`). :class:`TrajectoryEvidence` keeps the
result per column row; rows it does not list have no trajectory.
"""

from __future__ import annotations

import mmap
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

from rewardgym.analysis.columns import RolloutColumns
from rewardgym.analysis.trajectory_checks import TRAJECTORY_CHECKS, RecordChecks, evaluate
from rewardgym.stats.arrays import BoolArray

_NEEDLE = b'"ng_trajectory"'


@dataclass(frozen=True)
class TrajectoryEvidence:
    """Per column row (only rows that hold the key), the trajectory checks' results."""

    rows: dict[int, RecordChecks] = field(default_factory=dict)

    def unhealthy(self, n: int) -> BoolArray:
        out = np.zeros(n, np.bool_)
        for i, checks in self.rows.items():
            if checks.findings:
                out[i] = True
        return out

    def unobserved(self, i: int, ignored: Collection[str]) -> list[str]:
        """The trajectory checks row ``i`` left unobserved."""
        checks = self.rows.get(i)
        if checks is None:
            return [c for c in TRAJECTORY_CHECKS if c not in ignored]
        return checks.unobserved


def _has_needle(path: Path) -> bool:
    with path.open("rb") as handle:
        try:
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
                return view.find(_NEEDLE) >= 0
        except ValueError:  # an empty file cannot be mapped
            return False


def read_trajectory_evidence(
    path: Path, columns: RolloutColumns, ignored: Collection[str] = ()
) -> TrajectoryEvidence:
    """The trajectory checks of every line of ``path`` that holds ``ng_trajectory`` (module doc)."""
    if len(columns) == 0 or not _has_needle(path):
        return TrajectoryEvidence()
    rows: dict[int, RecordChecks] = {}
    with path.open("rb") as handle:
        for i, offset in enumerate(columns.offset.tolist()):
            handle.seek(offset)
            line = handle.readline()
            if _NEEDLE not in line:
                continue
            record = orjson.loads(line)
            if isinstance(record, dict) and "ng_trajectory" in record:
                rows[i] = evaluate(record, ignored)
    return TrajectoryEvidence(rows)
