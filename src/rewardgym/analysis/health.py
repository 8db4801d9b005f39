"""Section 4: rollout health checks on the analysis columns (pure; no I/O).

Contract of :func:`health_checks`:

- rollout checks give one boolean per rollout line. NeMo Gym 0.7.0's trajectory checks
  (:mod:`rewardgym.analysis.trajectory_checks`) run on the lines that carry ``ng_trajectory``
  (``trajectory``, read by :mod:`rewardgym.analysis.trajectory_evidence`); on those lines they replace the
  line-level checks of the same id below. A rollout with any finding is ``unhealthy``; else ``unobserved``
  when a trajectory check could not be evaluated (every line without a trajectory: NeMo Gym's default), else
  ``healthy``. Ids shared
  with NeMo Gym 0.7.0 keep its meaning (docs/reference/health_check.md §2.3): ``record_unreadable``,
  ``rollout_duplicate_identity``, ``agent_turn_hollow`` (the line has a response, and it has no message
  text, no reasoning and no tool call), ``model_call_zero_completion_tokens`` (``usage.output_tokens == 0``),
  ``model_call_missing_token_counts`` (the line has a response whose ``usage`` lacks the prompt or the
  completion token count: absent, null or not a number; 0 counts as present),
  ``model_call_runaway_generation`` (cut off at a length limit with no content). Ours:
  ``no_extracted_answer`` (``extracted_answer`` present but null or empty), ``rollout_cut_off``,
  ``reward_out_of_range`` (outside the declared range, or not a number);
- task checks flag tasks: ``task_consistently_unhealthy`` (NeMo Gym's: ≥ 2 repeats that are not
  unobserved, all unhealthy), ``task_no_successful_model_calls`` (every materialized repeat failed:
  failures, no rollout; or, NeMo Gym's rule, every repeat observed its policy calls and none succeeded),
  ``repeats_identical`` (≥ 2 repeats, all with the same non-empty response text),
  ``task_zero_all_cut_off`` (0 % pass rate and every rollout cut off: not hard, truncated),
  ``task_not_collected`` (in the materialized inputs, with neither a rollout nor a failure record: an
  interrupted or partial run);
- run checks: ``collection_failures`` (the failures sidecar, by class);
- ``ignored`` checks (``--ignore-checks``, ``++health_check_ignored_checks``) do not run: their flags stay
  all false, their findings are dropped, and :func:`ignored_check_ids` checks the ids (NeMo Gym 0.7.0's
  registry ids and ours; an id of NeMo's we do not run is accepted and only recorded);
- a :class:`~rewardgym.analysis.findings.Finding` is one dataset-level verdict: severity (``error`` /
  ``warning``), counts, the evidence in words, a likely fix and up to 5 example (task, rollout) keys
  (:mod:`rewardgym.analysis.findings` has the thresholds). The overall verdict is
  ``unhealthy`` with any error, ``warnings`` with only warnings, else ``healthy``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from rewardgym.analysis.check_ids import TASK_CHECKS
from rewardgym.analysis.columns import RolloutColumns
from rewardgym.analysis.findings import dataset_findings
from rewardgym.analysis.health_types import Health, unobserved_rows
from rewardgym.analysis.trajectory_evidence import TrajectoryEvidence
from rewardgym.stats.arrays import BoolArray, IntArray

DETAILS: dict[str, dict[str, Any]] = {
    "rollout_duplicate_identity": {},
    "agent_turn_hollow": {"reason": "response has no message text, reasoning or tool call"},
    "model_call_zero_completion_tokens": {"completion_tokens": 0},
    "model_call_runaway_generation": {"finish_reason": "max_output_tokens"},
    "no_extracted_answer": {"reason": "the verifier extracted no answer"},
    "rollout_cut_off": {"reason": "response cut off at the output-token limit"},
    "reward_out_of_range": {},
}


def _rollout_flags(
    columns: RolloutColumns, reward_range: tuple[float, float]
) -> tuple[dict[str, BoolArray], IntArray]:
    n = len(columns)
    same = np.concatenate(
        ([False], (columns.task[1:] == columns.task[:-1]) & (columns.rollout[1:] == columns.rollout[:-1]))
    )
    group = np.cumsum(~same) - 1
    sizes = np.bincount(group, minlength=int(group.max()) + 1 if n else 0)
    duplicates = sizes[group] if n else np.zeros(0, np.int64)
    content = (columns.text_chars > 0) | (columns.reasoning_chars > 0) | (columns.tool_calls > 0)
    cut = columns.cut_off
    with np.errstate(invalid="ignore"):
        out_of_range = ~columns.masked & ~(
            (columns.reward >= reward_range[0]) & (columns.reward <= reward_range[1])
        )
    flags = {
        "record_unreadable": np.zeros(n, np.bool_),
        "rollout_duplicate_identity": duplicates > 1,
        "agent_turn_hollow": columns.has_response & ~content,
        "model_call_zero_completion_tokens": columns.output_tokens == 0,
        "model_call_missing_token_counts": columns.has_response
        & (np.isnan(columns.input_tokens) | np.isnan(columns.output_tokens)),
        "model_call_runaway_generation": cut & (columns.text_chars == 0) & (columns.tool_calls == 0),
        "no_extracted_answer": columns.extracted == 0,
        "rollout_cut_off": cut,
        "reward_out_of_range": out_of_range,
    }
    return flags, duplicates.astype(np.int64)


def _task_flags(
    columns: RolloutColumns,
    starts: IntArray,
    unhealthy: BoolArray,
    passes: IntArray,
    failure_only: BoolArray,
    unobserved: BoolArray,
    trajectory: TrajectoryEvidence,
) -> dict[str, BoolArray]:
    if starts.shape[0] == 0:
        empty = np.zeros(0, np.bool_)
        return {check: empty for check in TASK_CHECKS}
    repeats = np.diff(np.append(starts, len(columns)))
    bad = np.add.reduceat(unhealthy.astype(np.int64), starts)
    computable = repeats - np.add.reduceat(unobserved.astype(np.int64), starts)
    low = np.minimum.reduceat(columns.text_hash, starts)
    high = np.maximum.reduceat(columns.text_hash, starts)
    counted = ~columns.masked & np.isfinite(columns.reward)
    cut = np.add.reduceat((columns.cut_off & counted).astype(np.int64), starts)
    n = np.add.reduceat(counted.astype(np.int64), starts)
    return {
        "task_consistently_unhealthy": (computable >= 2) & (bad == computable),
        "task_no_successful_model_calls": failure_only
        | _no_successful_calls(starts, len(columns), trajectory),
        "repeats_identical": (repeats >= 2) & (low == high) & (low != 0),
        "task_zero_all_cut_off": (n > 0) & (passes == 0) & (cut == n),
        "task_not_collected": np.zeros(starts.shape[0], np.bool_),  # such tasks have no rows here
    }


def _no_successful_calls(starts: IntArray, n: int, trajectory: TrajectoryEvidence) -> BoolArray:
    """NeMo Gym's ``task_no_successful_model_calls``: every repeat of the task observed its policy calls
    (complete turn bindings) and none had a successful turn-bound call."""
    out = np.zeros(starts.shape[0], np.bool_)
    if not trajectory.rows:
        return out
    observed = np.zeros(n, np.bool_)
    succeeded = np.zeros(n, np.bool_)
    for i, checks in trajectory.rows.items():
        observed[i] = checks.policy_calls_observed
        succeeded[i] = checks.turn_success > 0
    repeats = np.diff(np.append(starts, n))
    all_observed: BoolArray = np.add.reduceat(observed.astype(np.int64), starts) == repeats
    none_succeeded: BoolArray = np.add.reduceat(succeeded.astype(np.int64), starts) == 0
    return all_observed & none_succeeded


_LINE_LEVEL = (
    "agent_turn_hollow", "model_call_zero_completion_tokens", "model_call_missing_token_counts",
    "model_call_runaway_generation",
)  # fmt: skip
"""Checks of NeMo Gym's ids read from the line; on a line with a trajectory NeMo Gym's rules replace them."""


def health_checks(
    columns: RolloutColumns,
    task_ids: IntArray,
    starts: IntArray,
    passes: IntArray,
    *,
    reward_range: tuple[float, float] = (0.0, 1.0),
    failure_classes: dict[str, int] | None = None,
    failure_tasks: IntArray | None = None,
    materialized: int | None = None,
    unreadable: int = 0,
    uncollected_tasks: IntArray | None = None,
    ignored: tuple[str, ...] = (),
    trajectory: TrajectoryEvidence | None = None,
) -> Health:
    """Every check but the ``ignored`` ones (see module doc); ``passes`` per task of ``task_ids``."""
    trajectory = trajectory or TrajectoryEvidence()
    flags, duplicates = _rollout_flags(columns, reward_range)
    for check in ignored:
        if check in flags:
            flags[check] = np.zeros(len(columns), np.bool_)
    traced = [i for i, checks in trajectory.rows.items() if checks.has_trajectory]
    for check in _LINE_LEVEL:
        flags[check][traced] = False
    unhealthy = trajectory.unhealthy(len(columns))
    for flag in flags.values():
        unhealthy |= flag
    only_failed = np.zeros(0, np.int64)
    if failure_tasks is not None and failure_tasks.shape[0]:  # (setdiff1d would sort every task id)
        only_failed = np.setdiff1d(failure_tasks, task_ids)
    task_flags = _task_flags(
        columns, starts, unhealthy, passes, np.zeros(task_ids.shape[0], np.bool_),
        unobserved_rows(trajectory, ignored, unhealthy), trajectory,
    )  # fmt: skip
    for check in ignored:
        if check in task_flags:
            task_flags[check] = np.zeros(task_ids.shape[0], np.bool_)
    if "task_no_successful_model_calls" in ignored:
        only_failed = np.zeros(0, np.int64)
    if "task_not_collected" in ignored:
        uncollected_tasks = None
    health = Health(
        rollout_flags=flags,
        duplicate_count=duplicates,
        task_ids=task_ids,
        task_flags=task_flags,
        failure_tasks=only_failed.astype(np.int64),
        uncollected_tasks=np.zeros(0, np.int64) if uncollected_tasks is None else uncollected_tasks,
        findings=[],
        unreadable=unreadable,
        ignored=ignored,
        trajectory=trajectory,
    )
    findings = dataset_findings(
        health, columns, reward_range, failure_classes or {}, materialized=materialized
    )
    return replace(health, findings=[f for f in findings if f.check not in ignored])
