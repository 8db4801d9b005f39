"""Joining materialized inputs and rollouts on ``(_ng_task_index, _ng_rollout_index)``, NeMo Gym's checks.

Contract (:func:`align`), run on *all* rows and results before any masking:

- a key that occurs twice in either file is an error naming the key, the file and both lines;
- a result whose key has no input row is always an error ("extra rollout rows", first 10 keys listed);
- an input row without a result is an error unless ``allow_partial`` — the message suggests
  ``++allow_partial_rollouts=True``;
- otherwise the result is the input rows in key order and the results in key order, each with its
  input row.

Keys are packed into one int64 each. When the keys are dense (the usual ``0..T-1 × 0..R-1``) the join
is a direct-address table, O(n) with no sorting; otherwise a sort.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rewardgym.errors import DataError

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_SHOWN_KEYS = 10
_FAST_LIMIT = 1 << 31


def encode_keys(tasks: list[IntArray], rollouts: list[IntArray]) -> list[IntArray]:
    """One int64 per ``(task, rollout)`` pair, ordered like the pairs, comparable across the given arrays."""
    all_tasks = np.concatenate(tasks) if tasks else np.zeros(0, np.int64)
    all_rollouts = np.concatenate(rollouts) if rollouts else np.zeros(0, np.int64)
    if len(all_tasks) == 0:
        return [np.zeros(0, np.int64) for _ in tasks]
    small = (
        all_tasks.min() >= 0
        and all_tasks.max() < _FAST_LIMIT
        and all_rollouts.min() >= 0
        and all_rollouts.max() < _FAST_LIMIT
    )
    if small:
        keys = (all_tasks << 31) | all_rollouts
    else:
        _, task_rank = np.unique(all_tasks, return_inverse=True)
        rollout_values, rollout_rank = np.unique(all_rollouts, return_inverse=True)
        keys = task_rank.astype(np.int64) * len(rollout_values) + rollout_rank
    bounds = np.cumsum([0, *(len(t) for t in tasks)])
    return [keys[bounds[i] : bounds[i + 1]] for i in range(len(tasks))]


def _format_keys(tasks: IntArray, rollouts: IntArray) -> str:
    return (
        "[" + ", ".join(f"({t}, {r})" for t, r in zip(tasks.tolist(), rollouts.tolist(), strict=True)) + "]"
    )


def _raise_duplicate(
    keys: IntArray, task: IntArray, rollout: IntArray, lines: IntArray, what: str, path: str
) -> None:
    order = np.argsort(keys, kind="stable")
    repeated = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    if len(repeated) == 0:
        return
    # Report the duplicate whose second occurrence comes first in the file.
    second = order[repeated + 1]
    pick = int(np.argmin(lines[second]))
    first_row, second_row = int(order[repeated[pick]]), int(second[pick])
    raise DataError(
        f"Duplicate {what} row for rollout key ({task[second_row]}, {rollout[second_row]}): "
        f"'{path}' lines {lines[first_row]} and {lines[second_row]}"
    )


@dataclass(frozen=True)
class Alignment:
    """Inputs and results in key order, results matched to their input rows."""

    input_order: IntArray
    """All input row indices in ``(task, rollout)`` order."""
    results: IntArray
    """Result row indices in ``(task, rollout)`` order."""
    inputs: IntArray
    """The input row of each of those results."""
    input_matched: BoolArray
    """Per input row: whether it has a result."""


def _order(keys: IntArray) -> IntArray:
    """Indices that sort unique keys (cheap when they are sorted already)."""
    if len(keys) < 2 or bool(np.all(keys[1:] > keys[:-1])):
        return np.arange(len(keys), dtype=np.int64)
    return np.argsort(keys).astype(np.int64)


def _has_duplicates(sorted_keys: IntArray) -> bool:
    return len(sorted_keys) > 1 and bool(np.any(sorted_keys[1:] == sorted_keys[:-1]))


def _dense_join(
    in_task: IntArray, in_rollout: IntArray, res_task: IntArray, res_rollout: IntArray
) -> tuple[IntArray, IntArray, IntArray, BoolArray] | None:
    """Direct-address join when the keys are dense; None when they are not (or when some key repeats)."""
    if len(in_task) == 0 or len(res_task) == 0:
        return None
    task_low = min(int(in_task.min()), int(res_task.min()))
    rollout_low = min(int(in_rollout.min()), int(res_rollout.min()))
    task_span = max(int(in_task.max()), int(res_task.max())) - task_low + 1
    rollout_span = max(int(in_rollout.max()), int(res_rollout.max())) - rollout_low + 1
    span = task_span * rollout_span
    if span > 4 * (len(in_task) + len(res_task)) + 1024:
        return None
    in_slot_id = (in_task - task_low) * rollout_span + (in_rollout - rollout_low)
    res_slot_id = (res_task - task_low) * rollout_span + (res_rollout - rollout_low)
    in_slot = np.full(span, -1, dtype=np.int64)
    in_slot[in_slot_id] = np.arange(len(in_task), dtype=np.int64)
    res_slot = np.full(span, -1, dtype=np.int64)
    res_slot[res_slot_id] = np.arange(len(res_task), dtype=np.int64)
    if int(np.count_nonzero(in_slot >= 0)) != len(in_task) or int(np.count_nonzero(res_slot >= 0)) != len(
        res_task
    ):
        return None  # a repeated key: the sorting path reports it
    has_result = res_slot >= 0
    results = res_slot[has_result]
    inputs = in_slot[has_result]
    if bool(np.any(inputs < 0)):
        return None  # an extra result: the sorting path reports it
    return in_slot[in_slot >= 0], results, inputs, res_slot[in_slot_id] >= 0


def align(
    inputs: tuple[IntArray, IntArray, IntArray],
    results: tuple[IntArray, IntArray, IntArray],
    *,
    inputs_path: str,
    results_path: str,
    allow_partial: bool,
) -> Alignment:
    """Check and join ``(task, rollout, line)`` columns of the inputs and the results (see module doc)."""
    in_task, in_rollout, in_lines = inputs
    res_task, res_rollout, res_lines = results
    dense = _dense_join(in_task, in_rollout, res_task, res_rollout)
    if dense is not None:
        input_order, result_order, matched_inputs, input_matched = dense
    else:
        in_keys, res_keys = encode_keys([in_task, res_task], [in_rollout, res_rollout])
        input_order = _order(in_keys)
        sorted_in = in_keys[input_order]
        if _has_duplicates(sorted_in):
            _raise_duplicate(in_keys, in_task, in_rollout, in_lines, "materialized input", inputs_path)
        result_order = _order(res_keys)
        sorted_res = res_keys[result_order]
        if _has_duplicates(sorted_res):
            _raise_duplicate(res_keys, res_task, res_rollout, res_lines, "result", results_path)
        position = np.searchsorted(sorted_in, sorted_res)
        clipped = np.minimum(position, max(len(sorted_in) - 1, 0))
        found = (
            (position < len(sorted_in)) & (sorted_in[clipped] == sorted_res)
            if len(sorted_in)
            else position < 0
        )
        if not found.all():
            extra = result_order[~found]
            first_line = int(res_lines[extra].min())
            raise DataError(
                "Rollout results contain rows with no matching materialized input rows. "
                f"Found {len(extra)} extra rollout rows. Extra rollout keys: "
                f"{_format_keys(res_task[extra[:_SHOWN_KEYS]], res_rollout[extra[:_SHOWN_KEYS]])} "
                f"(first at '{results_path}:{first_line}')"
            )
        matched_inputs = input_order[position]
        input_matched = np.zeros(len(in_task), dtype=np.bool_)
        input_matched[matched_inputs] = True
    if not allow_partial and not input_matched.all():
        missing = input_order[~input_matched[input_order]]
        raise DataError(
            "Materialized input rows and rollout results do not have matching rollout keys. "
            f"Missing rollout results for {len(missing)} materialized input rows. Missing rollout keys: "
            f"{_format_keys(in_task[missing[:_SHOWN_KEYS]], in_rollout[missing[:_SHOWN_KEYS]])}.\n\n"
            "Use ++allow_partial_rollouts=True (or --allow-partial-rollouts) to profile completed rollouts "
            "from a partial collection."
        )
    return Alignment(
        input_order=input_order, results=result_order, inputs=matched_inputs, input_matched=input_matched
    )


def run_starts(sorted_values: IntArray) -> IntArray:
    """Start positions of the runs of equal values in a sorted array."""
    if len(sorted_values) == 0:
        return np.zeros(0, np.int64)
    return np.concatenate(([0], np.flatnonzero(sorted_values[1:] != sorted_values[:-1]) + 1)).astype(np.int64)


@dataclass(frozen=True)
class CompletionSummary:
    """NeMo Gym's ``profile_completion_summary`` (computed before masking)."""

    expected_rollout_rows: int
    """Materialized input rows."""
    completed_rollout_rows: int
    """Input rows that have a result (masked ones included)."""
    total_input_rows: int
    """Distinct (task, run key) groups."""
    complete_input_rows: int
    """Groups whose every input row has a result."""
    partial_input_rows: int
    """Groups with some but not all results."""
    missing_input_rows: int
    """Groups without any result (dropped from the per-task output)."""

    @property
    def reward_profile_completion_pct(self) -> float:
        if self.expected_rollout_rows == 0:
            return 100.0
        return 100.0 * self.completed_rollout_rows / self.expected_rollout_rows


def completion_summary(
    task: IntArray, run_key: IntArray, matched: BoolArray, input_order: IntArray
) -> CompletionSummary:
    """Completion accounting over all input rows, grouped by (task, run key)."""
    if len(task) == 0:
        return CompletionSummary(0, 0, 0, 0, 0, 0)
    order = input_order
    tasks = task[order]
    keys = run_key[order]
    same_task = tasks[1:] == tasks[:-1]
    if bool(np.any(same_task & (keys[1:] != keys[:-1]))):
        order = order[np.lexsort((keys, tasks))]
        tasks = task[order]
        keys = run_key[order]
    change = (tasks[1:] != tasks[:-1]) | (keys[1:] != keys[:-1])
    starts = np.concatenate(([0], np.flatnonzero(change) + 1)).astype(np.int64)
    expected = np.diff(np.append(starts, len(tasks)))
    completed = np.add.reduceat(matched[order].astype(np.int64), starts)
    complete = int(np.count_nonzero(completed == expected))
    missing = int(np.count_nonzero(completed == 0))
    return CompletionSummary(
        expected_rollout_rows=len(task),
        completed_rollout_rows=int(matched.sum()),
        total_input_rows=len(starts),
        complete_input_rows=complete,
        partial_input_rows=len(starts) - complete - missing,
        missing_input_rows=missing,
    )
