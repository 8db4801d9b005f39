"""What :meth:`Curriculum.state` returns: per-task posterior, times served, informative-group rate so far.

Contract: :class:`CurriculumState` is a frozen snapshot (numpy arrays copied out of the live state, all
of the same length, one entry per listed task); :meth:`CurriculumState.as_dict` is its JSON form (the
HTTP service's ``/state`` answer), where a rate of a task with no reported group is ``null``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rewardgym.stats.arrays import FloatArray, IntArray


@dataclass(frozen=True, eq=False)
class CurriculumState:
    """The curriculum as of ``step`` (see module doc)."""

    step: int
    policy: str
    group_size: int
    half_life: float
    reports: int
    """Groups reported so far (all tasks)."""
    informative_share: float
    """Share of reported groups that were informative (NaN before the first report)."""
    prior: dict[str, Any]
    """The pool prior the posteriors use (:meth:`rewardgym.stats.prior.GridPrior.as_dict`)."""
    tasks: IntArray
    served: IntArray
    reported: IntArray
    informative: IntArray
    passes: FloatArray
    """Discounted passes as of ``step``."""
    failures: FloatArray
    pass_mean: FloatArray
    """Posterior mean of the task's pass probability."""
    p_informative: FloatArray
    """Posterior probability that a fresh group of ``group_size`` is informative."""

    @property
    def informative_rate(self) -> FloatArray:
        """Per task, informative groups / reported groups (NaN where none was reported)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(np.where(self.reported > 0, self.informative / self.reported, np.nan))

    def as_dict(self) -> dict[str, Any]:
        def listed(values: npt.NDArray[Any], digits: int | None = None) -> list[Any]:
            if digits is None:
                return [int(v) for v in values]
            return [None if not np.isfinite(v) else round(float(v), digits) for v in values]

        share = self.informative_share
        return {
            "step": self.step,
            "policy": self.policy,
            "group_size": self.group_size,
            "half_life": self.half_life,
            "reports": self.reports,
            "informative_share": None if not np.isfinite(share) else round(share, 6),
            "prior": self.prior,
            "tasks": {
                "_ng_task_index": listed(self.tasks),
                "served": listed(self.served),
                "reported": listed(self.reported),
                "informative": listed(self.informative),
                "informative_rate": listed(self.informative_rate, 6),
                "passes": listed(self.passes, 4),
                "failures": listed(self.failures, 4),
                "pass_mean": listed(self.pass_mean, 6),
                "p_informative": listed(self.p_informative, 6),
            },
        }
