"""The settings of adaptive repeats (``gym eval run --adaptive``): :class:`AdaptivePolicy`, recorded in
the run fingerprint. Pure data (no numpy): the command line and a run that is not adaptive read it without
loading the decision rule (:mod:`rewardgym.stats.adaptive`), which re-exports it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["LEGACY_RULE", "REGRET_RULE", "AdaptivePolicy"]

REGRET_RULE = "regret"
LEGACY_RULE = "posterior"
"""The rule of runs made before the regret rule (their recorded policy has no ``rule``)."""


@dataclass(frozen=True)
class AdaptivePolicy:
    """How ``--adaptive`` spends repeats (every field is recorded in the run fingerprint)."""

    initial: int = 2
    """Rollouts every task gets first (``--adaptive-initial``): two already settle half of the p = ½ tasks."""
    max_per_task: int = 16
    """Never more materialized rollouts per task (``--adaptive-max``)."""
    budget: int | None = None
    """Total materialized rollouts of the run, initial round included (``--adaptive-budget``)."""
    step: int | None = None
    """Rollouts added per unsettled task and round (``--adaptive-step``; default: ``initial``)."""
    confidence: float | None = None
    """Probability a decision needs (``--adaptive-confidence``; default :attr:`level`)."""
    boundary: float | None = None
    """Decide "is p above this pass rate" instead of "is p in (0, 1)" (``--adaptive-boundary``)."""
    pass_threshold: float = 1.0
    """A rollout passes when ``reward >= pass_threshold`` (as in ``gym eval analyze``)."""
    rule: str = REGRET_RULE
    """How an all-fail / all-pass task is settled (recorded so a run is replayed with its own rule)."""

    @property
    def level(self) -> float:
        """The confidence in force: 0.99 for the default decision (a task stops short of the cap only when
        the cap's repeats would change its call with probability ≤ 1 %: that keeps the never / sometimes /
        always calls within a point of fixed repeats at the cap in every pool of the calibration suite),
        0.95 for ``--adaptive-boundary`` and for runs recorded with the earlier rule."""
        if self.confidence is not None:
            return self.confidence
        return 0.99 if self.boundary is None and self.rule == REGRET_RULE else 0.95

    @property
    def round_step(self) -> int:
        return self.step if self.step is not None else self.initial

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, value: dict[str, Any]) -> AdaptivePolicy:
        known = {k: v for k, v in value.items() if k in cls.__dataclass_fields__}
        known.setdefault("rule", LEGACY_RULE)  # recorded before the rule was: the run used the old one
        return cls(**known)

    def problems(self) -> list[str]:
        """What is wrong with these settings, in command-line terms (empty when valid)."""
        found = []
        least = 1 if self.boundary is not None else 2
        if self.initial < least:
            # One rollout per task cannot tell a task that is sometimes solved from one never solved, so
            # the prior fitted to the run would be a guess.
            why = "" if least == 1 else " (one rollout per task says nothing about tasks in between)"
            found.append(f"--adaptive-initial must be >= {least}, got {self.initial}{why}")
        if self.max_per_task < self.initial:
            found.append(
                f"--adaptive-max ({self.max_per_task}) must be >= --adaptive-initial ({self.initial})"
            )
        if self.budget is not None and self.budget < 1:
            found.append(f"--adaptive-budget must be >= 1, got {self.budget}")
        if self.step is not None and self.step < 1:
            found.append(f"--adaptive-step must be >= 1, got {self.step}")
        if not 0.5 < self.level < 1:  # NaN fails it too
            found.append(f"--adaptive-confidence must be in (0.5, 1), got {self.level}")
        if self.boundary is not None and not 0 < self.boundary < 1:
            found.append(f"--adaptive-boundary must be a pass rate in (0, 1), got {self.boundary}")
        return found
