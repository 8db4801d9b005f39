"""The ``--adaptive*`` options of ``gym eval run`` and their checks (the rule: ``metrics.adaptive``).

A fresh run records the whole policy in its fingerprint; a ``--resume`` compares only the adaptive options
given again (the rest is the recorded policy), like the materialization settings.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from rewardgym.errors import UsageError
from rewardgym.stats.adaptive_policy import AdaptivePolicy

FLAGS = [
    "--adaptive", "--adaptive-initial", "--adaptive-max", "--adaptive-budget", "--adaptive-step",
    "--adaptive-confidence", "--adaptive-boundary", "--adaptive-pass-threshold",
]  # fmt: skip

AdaptiveOpt = Annotated[
    bool,
    typer.Option(
        "--adaptive",
        help="Adaptive repeats: start every task with --adaptive-initial rollouts, then add rollouts in "
        "rounds only to tasks whose decision is unsettled (docs/decide.md).",
    ),
]
InitialOpt = Annotated[
    int | None, typer.Option("--adaptive-initial", help="Rollouts every task gets first (default 2).")
]
MaxOpt = Annotated[
    int | None, typer.Option("--adaptive-max", help="At most this many rollouts per task (default 16).")
]
BudgetOpt = Annotated[
    int | None,
    typer.Option("--adaptive-budget", help="At most this many rollouts in all, first round included."),
]
StepOpt = Annotated[
    int | None,
    typer.Option("--adaptive-step", help="Rollouts added per unsettled task and round (default: initial)."),
]
ConfidenceOpt = Annotated[
    float | None,
    typer.Option(
        "--adaptive-confidence",
        help="Probability a decision needs (default 0.99; 0.95 with --adaptive-boundary).",
    ),
]
BoundaryOpt = Annotated[
    float | None,
    typer.Option(
        "--adaptive-boundary",
        help="Decide whether each task's pass rate is above this value instead of whether it is in (0, 1).",
    ),
]
PassThresholdOpt = Annotated[
    float | None,
    typer.Option("--adaptive-pass-threshold", help="A rollout passes when reward >= this (default 1.0)."),
]


def adaptive_settings(
    *,
    adaptive: bool,
    resume: bool,
    num_repeats_given: bool,
    initial: int | None,
    max_per_task: int | None,
    budget: int | None,
    step: int | None,
    confidence: float | None,
    boundary: float | None,
    pass_threshold: float | None,
) -> tuple[AdaptivePolicy | None, dict[str, Any] | None]:
    """The policy of a fresh run (None on resume: it is recorded) and, on resume, the adaptive settings given
    again, which the fingerprint check compares with the recorded ones."""
    given: dict[str, Any] = {
        key: value
        for key, value in (
            ("initial", initial),
            ("max_per_task", max_per_task),
            ("budget", budget),
            ("step", step),
            ("confidence", confidence),
            ("boundary", boundary),
            ("pass_threshold", pass_threshold),
        )
        if value is not None
    }
    if not adaptive:
        if given:
            flag = "--adaptive-" + next(iter(given)).replace("max_per_task", "max").replace("_", "-")
            raise UsageError(f"{flag} needs --adaptive")
        return None, None
    if num_repeats_given:
        raise UsageError(
            "--adaptive chooses the repeats per task itself: give --adaptive-initial and --adaptive-max "
            "instead of --num-repeats / ++num_repeats"
        )
    if resume:  # compared with the recorded policy, which was checked when the run started
        return None, given
    policy = AdaptivePolicy(**given)
    problems = policy.problems()
    if problems:
        raise UsageError("; ".join(problems))
    return policy, None  # the collector records the whole policy
