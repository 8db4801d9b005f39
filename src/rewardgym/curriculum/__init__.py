"""An online curriculum: which tasks an RL trainer should roll out next, from the rewards it reports.

Layout: ``core`` — :class:`Curriculum` (next_batch / report / state, persistence); ``policy`` — the
policy registry; ``policies`` — ``uniform``, ``dynamic-sampling``, ``greso``, ``thompson`` and
``expected-signal``; ``table`` — the posterior numbers of the pool prior over quantized counts; ``state`` —
the per-task numpy arrays; ``store`` — snapshot and journal; ``status`` — what ``state()`` returns;
``errors`` — what a refused call raises. docs/curriculum.md describes it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Curriculum", "CurriculumState"]


def __getattr__(name: str) -> Any:
    if name == "Curriculum":
        from rewardgym.curriculum.core import Curriculum

        return Curriculum
    if name == "CurriculumState":
        from rewardgym.curriculum.status import CurriculumState

        return CurriculumState
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
