"""Adaptive repeats (``gym eval run --adaptive``): rounds of extra rollouts for the tasks still unsettled.

Contract:
- The first round is an ordinary materialization with ``initial`` repeats. After every round the rollouts
  file is counted per task (``n`` stored rollouts, ``s`` passes) next to the materialized rows
  (``allocated``), and :mod:`rewardgym.stats.adaptive` decides which tasks stay unsettled and how many
  rollouts each gets (caps and budget included).
- New rollouts are new materialized rows: a copy of the task's first row with the next
  ``_ng_rollout_index`` (max + 1, so each task's indices stay 0..n-1 when they were), its seed renewed with
  ``--num-repeats-add-seed`` (:func:`rewardgym.collect.materialize.repeat_row`). They are appended to the
  materialized file and flushed (and ``fsync``-ed once per round) *before* any of them is dispatched, so the
  materialized file stays the source of truth for ``--resume``, ``gym eval profile`` and reverify.
- Crash safety: a crash mid-append leaves at most one torn last line, cut off on resume
  (:func:`~rewardgym.collect.appended_rows.repair_materialized_tail`); rows appended but not run are
  pending rows to ``--resume``; the next round is decided from the files alone, so a resumed run continues
  the rounds as if never interrupted.
  The run fingerprint hashes only the first round's bytes (``materialized_inputs_bytes``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from rewardgym.collect.appended_rows import rows_from
from rewardgym.collect.dispatch import Pending
from rewardgym.collect.materialize import repeat_row
from rewardgym.collect.resume import key_of
from rewardgym.errors import DataError
from rewardgym.io.jsonl import JsonlAppender, iter_jsonl, parse_line
from rewardgym.protocol import keys
from rewardgym.stats.adaptive import (
    AdaptivePolicy,
    Prior,
    PriorFit,
    allocate,
    classify,
    fit_priors,
    unsettled,
)
from rewardgym.stats.design_cost import expected_cost
from rewardgym.stats.prior import fit_prior


@dataclass
class TaskCounts:
    """Per task (in order of first appearance in the materialized file)."""

    tasks: list[int] = field(default_factory=list)
    allocated: dict[int, int] = field(default_factory=dict)
    next_index: dict[int, int] = field(default_factory=dict)
    n: dict[int, int] = field(default_factory=dict)
    passes: dict[int, int] = field(default_factory=dict)
    rollouts_read: int = 0
    """Bytes of the rollouts file counted so far."""
    rollouts_rows: int = 0

    def arrays(self) -> tuple[np.ndarray[Any, np.dtype[np.int64]], ...]:
        """``(allocated, n, s)`` in task order."""

        def column(values: dict[int, int]) -> np.ndarray[Any, np.dtype[np.int64]]:
            return np.array([values.get(t, 0) for t in self.tasks], dtype=np.int64)

        return column(self.allocated), column(self.n), column(self.passes)


def count_tasks(materialized: Path, rollouts: Path, pass_threshold: float) -> TaskCounts:
    """Per-task counts from both files (once per process; later rounds call :func:`count_new_rollouts`)."""
    counts = TaskCounts()
    for number, row in iter_jsonl(materialized, what="Materialized inputs"):
        task, rollout = key_of(row, f"{materialized}:{number}")
        if task not in counts.allocated:
            counts.tasks.append(task)
            counts.allocated[task] = 0
            counts.next_index[task] = 0
        counts.allocated[task] += 1
        counts.next_index[task] = max(counts.next_index[task], rollout + 1)
    count_new_rollouts(counts, rollouts, pass_threshold)
    return counts


def count_new_rollouts(counts: TaskCounts, rollouts: Path, pass_threshold: float) -> None:
    """Add the rollouts appended since the last call (the file only grows during a run, and between rounds
    it ends on a whole line), so a round reads only what the previous round wrote."""
    if not rollouts.exists():
        return
    with open(rollouts, "rb") as handle:
        handle.seek(counts.rollouts_read)
        for raw in handle:
            if not raw.endswith(b"\n"):
                break  # not a whole row (yet): read it next time
            counts.rollouts_read += len(raw)
            counts.rollouts_rows += 1
            row = parse_line(raw, rollouts, counts.rollouts_rows)
            task, _ = key_of(row, f"{rollouts}:{counts.rollouts_rows}")
            reward = row.get(keys.REWARD)
            if task not in counts.allocated or not isinstance(reward, int | float):
                continue  # the profiler reports a rollout without its row; here it simply does not count
            counts.n[task] = counts.n.get(task, 0) + 1
            counts.passes[task] = counts.passes.get(task, 0) + int(reward >= pass_threshold)


def _rows_until(path: Path, end: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """Rows of the first ``end`` bytes of ``path`` (the file may grow meanwhile)."""
    with open(path, "rb") as handle:
        consumed = 0
        number = 0
        while consumed < end:
            raw = handle.readline()
            if not raw:
                break
            consumed += len(raw)
            number += 1
            yield number, parse_line(raw, path, number)


def extend_materialized(
    materialized: Path, counts: TaskCounts, add: dict[int, int], *, add_seed: bool
) -> int:
    """Append ``add[task]`` new rows per task; returns the offset where they start."""
    appender = JsonlAppender(materialized)  # cuts a torn tail first
    start = materialized.stat().st_size
    try:
        for number, row in _rows_until(materialized, start):
            task, _ = key_of(row, f"{materialized}:{number}")
            extra = add.pop(task, 0)
            first = counts.next_index[task]
            for rollout in range(first, first + extra):
                appender.write(repeat_row(row, rollout, add_seed=add_seed, where=f"{materialized}:{number}"))
            counts.next_index[task] = first + extra
            counts.allocated[task] += extra
        appender.fsync()  # once per round: the rows are on disk before any of them is dispatched
    finally:
        appender.close()
    if add:
        raise DataError(f"{materialized}: no row of task(s) {sorted(add)[:5]} to repeat")
    return start


@dataclass
class RoundsResult:
    rounds: int = 0
    added: int = 0
    summary: str = ""


async def run_rounds(
    policy: AdaptivePolicy,
    materialized: Path,
    rollouts: Path,
    *,
    add_seed: bool,
    dispatch: Callable[[Iterator[Pending]], Awaitable[object]],
    keep_going: Callable[[], bool],
    on_added: Callable[[int], None],
    out: IO[str],
) -> RoundsResult:
    """Run rounds until every task is settled, capped, or the budget is spent (or ``keep_going`` fails)."""
    result = RoundsResult()
    counts: TaskCounts | None = None
    while keep_going():
        if counts is None:
            counts = count_tasks(materialized, rollouts, policy.pass_threshold)
        else:
            count_new_rollouts(counts, rollouts, policy.pass_threshold)
        allocated, n, s = counts.arrays()
        prior = fit_priors(n, s) if policy.boundary is None else None
        open_ = unsettled(n, s, policy, prior)
        add = allocate(allocated, open_, policy)
        if not add.any():
            result.summary = _summary(policy, counts, n, s, prior)
            break
        chosen = {t: int(k) for t, k in zip(counts.tasks, add.tolist(), strict=True) if k}
        offset = extend_materialized(materialized, counts, dict(chosen), add_seed=add_seed)
        added = int(add.sum())
        result.rounds += 1
        result.added += added
        out.write(
            f"Adaptive round {result.rounds}: {int(open_.sum())} of {len(counts.tasks)} tasks unsettled; "
            f"+{added} rollouts for {len(chosen)} tasks\n"
        )
        out.flush()
        on_added(added)
        await dispatch(rows_from(materialized, offset))
    return result


def _summary(
    policy: AdaptivePolicy,
    counts: TaskCounts,
    n: np.ndarray[Any, np.dtype[np.int64]],
    s: np.ndarray[Any, np.dtype[np.int64]],
    prior: Prior | PriorFit | None,
) -> str:
    names = {"never": "never solved", "always": "always solved", "open": "undecided at the cap or budget"}
    if policy.boundary is not None:
        names |= {"above": f"above {policy.boundary:g}", "below": f"at or below {policy.boundary:g}"}
    words = [names.get(word, word) for word in classify(n, s, policy, prior)]
    tally = {word: words.count(word) for word in dict.fromkeys(words)}
    total = int(sum(counts.allocated.values()))
    parts = ", ".join(f"{count} {word}" for word, count in tally.items())
    fixed = policy.max_per_task * len(counts.tasks)
    head = (
        f"Adaptive repeats: {len(counts.tasks)} tasks ({parts}); {total} rollouts materialized "
        f"({total / max(fixed, 1):.0%} of {fixed} for {policy.max_per_task} fixed repeats)"
    )
    return head + "\n" + cost_sentence(policy, n, s, prior)


def cost_sentence(
    policy: AdaptivePolicy,
    n: np.ndarray[Any, np.dtype[np.int64]],
    s: np.ndarray[Any, np.dtype[np.int64]],
    prior: Prior | PriorFit | None,
) -> str:
    """What the design costs against fixed repeats at its cap, expected under the run's fitted prior
    (:func:`rewardgym.stats.design_cost.expected_cost`)."""
    fitted = prior.best if isinstance(prior, PriorFit) else prior if prior is not None else fit_prior(n, s)
    cost = expected_cost(fitted, policy)
    a, f = cost.adaptive, cost.fixed
    return (
        f"  What it costs, expected under this run's fitted prior, against {cost.repeats} fixed repeats: "
        f"never/sometimes/always calls {a.call_accuracy:.0%} vs {f.call_accuracy:.0%} right; per-task pass "
        f"rates (unbiased under the stopping rule) RMSE {a.rmse:.2f} vs {f.rmse:.2f}, 95 % interval width "
        f"{a.interval_width:.2f} vs {f.interval_width:.2f}, pass-rate band right {a.band_accuracy:.0%} vs "
        f"{f.band_accuracy:.0%}. Adaptive runs suit the GRPO decision (and --adaptive-boundary questions), "
        "not per-task pass rates (docs/decide.md)."
    )
