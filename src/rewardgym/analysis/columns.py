"""The per-rollout columns every analysis runs on (plain numpy arrays; no I/O).

Contract: one :class:`RolloutColumns` holds one entry per rollout line, **sorted by (task, rollout)**
(the reader sorts them: :meth:`rewardgym.analysis.scan.Merged.sorted`). Missing numbers are NaN; flags
are booleans; the text hash is 0 for an empty response. :func:`task_segments` gives the start of each
task's run of rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rewardgym.stats.arrays import BoolArray, FloatArray, IntArray

HashArray = npt.NDArray[np.uint64]


@dataclass(frozen=True)
class RolloutColumns:
    """One entry per rollout line (see module doc)."""

    task: IntArray
    """``_ng_task_index``."""
    rollout: IntArray
    """``_ng_rollout_index``."""
    line: IntArray
    """1-based line number in the rollouts file."""
    offset: IntArray
    """Byte offset of the line (to re-read a few responses for the report)."""
    reward: FloatArray
    """``reward`` (NaN when absent or not a number)."""
    input_tokens: FloatArray
    """``response.usage.input_tokens`` (or ``prompt_tokens``)."""
    output_tokens: FloatArray
    """``response.usage.output_tokens`` (or ``completion_tokens``)."""
    total_tokens: FloatArray
    """``response.usage.total_tokens``, else input + output."""
    cap: FloatArray
    """The request's ``max_output_tokens`` (or ``max_tokens``); NaN when unset."""
    incomplete: BoolArray
    """``response.status == "incomplete"`` or an ``incomplete_details.reason`` naming a length limit."""
    text_chars: IntArray
    """Characters of visible output text (message content, not reasoning)."""
    reasoning_chars: IntArray
    """Characters of reasoning text."""
    tool_calls: IntArray
    """Function/tool-call items in ``response.output``."""
    turns: FloatArray
    """``ng_perf.num_turns`` when present, else NaN."""
    extracted: npt.NDArray[np.int8]
    """``extracted_answer``: -1 no such key, 0 null or empty, 1 a value."""
    text_hash: HashArray
    """A 64-bit hash of the visible output text (0 when empty)."""
    masked: BoolArray
    """A truthy ``mask_sample``."""
    agent: IntArray
    """Index of ``agent_ref.name`` in ``agents`` (-1 none)."""
    agents: tuple[str, ...]
    has_response: BoolArray
    """The line has a ``response`` object (without one, response checks have nothing to look at)."""

    def __len__(self) -> int:
        return int(self.task.shape[0])

    @property
    def cut_off(self) -> BoolArray:
        """Cut off: an incomplete response, or output tokens at (or over) the request's cap."""
        with np.errstate(invalid="ignore"):
            at_cap = np.isfinite(self.cap) & (self.output_tokens >= self.cap)
        return np.asarray(self.incomplete | at_cap, dtype=np.bool_)


def task_segments(task: IntArray) -> tuple[IntArray, IntArray]:
    """``(task ids, starts)`` of each run of equal values in a sorted task column."""
    if task.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.concatenate(([True], task[1:] != task[:-1])))
    return task[starts], starts.astype(np.int64)


def task_positions(task: IntArray) -> IntArray:
    """Per row of a sorted task column, its task's position 0, 1, … (the index into ``task_segments``)."""
    if task.shape[0] == 0:
        return np.zeros(0, np.int64)
    return np.cumsum(np.concatenate(([0], (task[1:] != task[:-1]).astype(np.int64)))).astype(np.int64)


def group_value_order(groups: IntArray, values: FloatArray) -> IntArray:
    """Indices that sort rows by (group, value); rows equal in both come in any order (every caller
    takes medians or tie-averaged ranks, which do not see it). Non-negative groups below 2^32 and whole
    values in [0, 2^31) — token counts per task — are sorted as one 64-bit key, several times faster
    than ``np.lexsort((values, groups))``, which sorts anything else."""
    if groups.shape[0] == 0:
        return np.zeros(0, np.int64)
    if (
        int(groups.min()) >= 0
        and int(groups.max()) < 2**32
        and float(values.min()) >= 0
        and float(values.max()) < 2**31
        and bool(np.all(values == np.floor(values)))
    ):
        return np.argsort((groups.astype(np.int64) << 31) | values.astype(np.int64)).astype(np.int64)
    return np.lexsort((values, groups)).astype(np.int64)


def key_order(task: IntArray, rollout: IntArray, line: IntArray) -> IntArray:
    """Indices that sort rows by (task, rollout, line). Unique (task, rollout) keys of non-negative
    indices that fit one 64-bit key — a collected run — take one unstable sort of that key; anything else
    (a duplicated key: the lines decide) ``np.lexsort``."""
    if task.shape[0] == 0:
        return np.zeros(0, np.int64)
    if (
        int(task.min()) >= 0
        and int(task.max()) < 2**40
        and int(rollout.min()) >= 0
        and int(rollout.max()) < 2**23
    ):
        key = (task.astype(np.int64) << 23) | rollout.astype(np.int64)
        order = np.argsort(key)
        ordered = key[order]
        if not bool(np.any(ordered[1:] == ordered[:-1])):
            return order.astype(np.int64)
    return np.lexsort((line, rollout, task)).astype(np.int64)
