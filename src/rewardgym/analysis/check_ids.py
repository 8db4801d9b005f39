"""The health-check ids (rewardgym's and NeMo Gym 0.7.0's) and the parsing of the ids a user ignores.

Contract: :func:`ignored_check_ids` takes a comma string or a list (``--ignore-checks a,b``,
``++health_check_ignored_checks=[a,b]``) and returns the ids stripped, blanks dropped, de-duplicated and
sorted; an id that is neither one of :data:`ALL_CHECKS` nor one of NeMo Gym's trajectory-only checks
(:data:`NEMO_ONLY_CHECKS`) is a ``ValueError`` in NeMo Gym's words
("Unknown rollout health check(s): a, b"). No numpy here: ``gym eval run`` checks the ids before it starts.
"""

from __future__ import annotations

ROLLOUT_CHECKS = (
    "record_unreadable",
    "rollout_duplicate_identity",
    "agent_turn_hollow",
    "model_call_zero_completion_tokens",
    "model_call_missing_token_counts",
    "model_call_runaway_generation",
    "no_extracted_answer",
    "rollout_cut_off",
    "reward_out_of_range",
)
TASK_CHECKS = (
    "task_consistently_unhealthy",
    "task_no_successful_model_calls",
    "repeats_identical",
    "task_zero_all_cut_off",
    "task_not_collected",
)
RUN_CHECKS = ("collection_failures",)
ALL_CHECKS = ROLLOUT_CHECKS + TASK_CHECKS + RUN_CHECKS
NEMO_ONLY_CHECKS = (
    "check_execution_error",
    "rollout_missing_agent_turns",
    "rollout_ended_on_failed_model_call",
    "trajectory_capture_mismatch",
    "model_call_failed",
    "rollout_token_count_mismatch",
)
"""NeMo Gym 0.7.0's check ids that only its trajectory rules give (:mod:`rewardgym.analysis.trajectory_checks`
runs them on lines with ``ng_trajectory``; ``check_execution_error`` never fires here)."""


def ignored_check_ids(value: object, *, refuse_blank: bool = False) -> tuple[str, ...]:
    """The check ids ``value`` names (a comma string or a list), stripped, blanks dropped, de-duplicated,
    sorted; an unknown id is a ``ValueError`` (NeMo Gym's wording), and so is a blank entry (``a,,b``)
    with ``refuse_blank`` (the command-line flag)."""
    if value is None:
        return ()
    if isinstance(value, str):
        entries = value.split(",")
    elif isinstance(value, list | tuple):
        entries = [str(entry) for entry in value]
    else:
        raise ValueError(f"ignored checks must be a comma-separated string or a list, got {value!r}")
    ids = [entry.strip() for entry in entries]
    if refuse_blank and any(not entry for entry in ids):
        raise ValueError(f"empty check id in {value!r}")
    ids = [entry for entry in ids if entry]
    unknown = sorted({entry for entry in ids if entry not in ALL_CHECKS and entry not in NEMO_ONLY_CHECKS})
    if unknown:
        raise ValueError(f"Unknown rollout health check(s): {', '.join(unknown)}")
    return tuple(sorted(set(ids)))


__all__ = [
    "ALL_CHECKS",
    "NEMO_ONLY_CHECKS",
    "ROLLOUT_CHECKS",
    "RUN_CHECKS",
    "TASK_CHECKS",
    "ignored_check_ids",
]
