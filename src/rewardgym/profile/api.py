"""The Python API of ``gym eval profile``: profile two files, or in-memory rows and results.

Contract:

- :func:`profile_files(inputs, rollouts, allow_partial=False)` reads both JSONL files (a metric value beyond
  ±1e100 is an error, see :mod:`.read.magnitude`), writes the three output files next to ``rollouts`` (temp
  file + rename each; nothing is written when any check fails) and returns a :class:`ProfileResult`. Per-task
  rows are streamed to disk, not kept in the result. Before reading, an output that is one of the two inputs
  (path, symbolic or hard link) or exists as anything but a regular file is refused, and the temp files and
  spools of killed earlier runs are removed (see :mod:`rewardgym.io.outputs`). An inputs file without rows, or
  a rollouts file without rollouts, is an error: there is nothing to profile. One ``observer`` (a
  :class:`~rewardgym.profile.read.observer.ProfileObserver`) lets a caller take part: its row hook takes the
  caller's own fields from the same parse of the rollouts (:attr:`ProfileResult.row_parts`, unless its
  ``keep_parts`` is false: they are then dropped after its ``after_read``), its ``while_reading`` runs in this
  process while the workers read, ``after_read`` once both files are read and checked, ``before_writing``
  before the first file is written — ``profile --report`` builds its columns and forks its analysis at the
  ``after_read``.
- :func:`profile_rows(rows, results, allow_partial=False)` runs the same profiler on lists of dicts
  (materialized-input rows and rollout/verify results), writes nothing, and returns the per-task rows
  too — exactly the objects the file would hold.
- :func:`profile_results(results, agent="agent")` is NeMo Gym's ``/aggregate_metrics`` use: results
  only, each keyed by its own indices, all of one agent (synthetic rows
  ``{_ng_task_index, _ng_rollout_index, agent_ref: {name: agent}}``).

Both raise :class:`~rewardgym.errors.DataError` for bad input (file:line, or ``results[i]`` for rows) —
including a measured rollout whose ``reward`` is not a number, unless ``allow_non_numeric_rewards=True``
(NeMo Gym 0.7.0's behaviour: such a reward is left out of the statistics; ``profile_results`` always
behaves so, as NeMo Gym's ``/aggregate_metrics`` does).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from rewardgym.errors import DataError
from rewardgym.io.outputs import guard_outputs, remove_stale
from rewardgym.profile.compute.align import CompletionSummary
from rewardgym.profile.compute.profiler import Profile, build_profile, prepare_profile
from rewardgym.profile.compute.report import TaskSummary, task_summary
from rewardgym.profile.read.chunks import InputChunk, ResultChunk
from rewardgym.profile.read.columns import InputColumns, ResultColumns, merge_inputs, merge_results
from rewardgym.profile.read.magnitude import check_magnitudes
from rewardgym.profile.read.observer import ProfileObserver
from rewardgym.profile.read.reader import read_files, remove_stale_spools
from rewardgym.profile.read.scan_inputs import inputs_from_rows
from rewardgym.profile.read.scan_results import results_from_rows
from rewardgym.profile.tuning import Tuning
from rewardgym.profile.write.lines import RowSamples, task_block
from rewardgym.profile.write.output import OutputPaths, output_paths, write_outputs
from rewardgym.protocol.keys import ROLLOUT_INDEX, TASK_INDEX


@dataclass(frozen=True)
class ProfileResult:
    """What a profiling run produced."""

    completion: CompletionSummary
    """Completion accounting over all rows (masked rollouts count as completed)."""
    masked_rollouts: int
    """Results with a truthy ``mask_sample``."""
    agent_metrics: list[dict[str, Any]]
    """Entries of ``<stem>_agent_metrics.json``."""
    repeat_level_metrics: list[dict[str, Any]]
    """Entries of ``<stem>_repeat_level_metrics.json``."""
    summary: TaskSummary
    """Pass-rate bands and the mean reward with its interval (our addition to the printed summary)."""
    task_row_count: int
    """Rows of ``<stem>_reward_profiling.jsonl``."""
    paths: OutputPaths | None = None
    """Where the files were written (``profile_files`` only)."""
    task_rows: list[dict[str, Any]] = field(default_factory=list)
    """The per-task rows (``profile_rows`` only; ``profile_files`` streams them to disk)."""
    seconds: float = 0.0
    """Wall time of the run."""
    profile: Profile | None = field(default=None, repr=False)
    """The columnar statistics behind the outputs, for further analysis."""
    row_parts: tuple[Any, ...] = field(default=(), repr=False)
    """What the observer's row hook made of each rollouts chunk, in file order (see ``keep_parts``)."""


def profile_files(
    inputs: str | os.PathLike[str],
    rollouts: str | os.PathLike[str],
    allow_partial: bool = False,
    *,
    tuning: Tuning | None = None,
    allow_non_numeric_rewards: bool = False,
    observer: ProfileObserver | None = None,
) -> ProfileResult:
    """Profile ``rollouts`` against ``inputs`` and write the three output files (see module doc)."""
    started = time.perf_counter()
    tuning = tuning or Tuning()
    inputs_path, rollouts_path = Path(inputs), Path(rollouts)
    paths = output_paths(rollouts_path)
    guard_outputs(
        [(path, "profile output") for path in (paths.reward_profiling, paths.agent_metrics,
                                                paths.repeat_level_metrics)],
        [(inputs_path, "--inputs"), (rollouts_path, "--rollouts")],
    )  # fmt: skip
    remove_stale(paths.reward_profiling.parent)  # temp files of a killed run (their owner is gone)
    remove_stale_spools()
    input_columns, result_columns = read_files(
        inputs_path,
        rollouts_path,
        tuning,
        allow_non_numeric_rewards=allow_non_numeric_rewards,
        observer=observer,
    )
    if len(input_columns.task) == 0:
        raise DataError(f"'{inputs_path}' (--inputs) holds no rows: there is nothing to profile")
    if len(result_columns.task) == 0:
        raise DataError(
            f"'{rollouts_path}' (--rollouts) holds no rollouts: there is nothing to profile "
            f"({len(input_columns.task)} input rows are all still missing)"
        )
    check_magnitudes(result_columns, str(rollouts_path))
    observer = observer or ProfileObserver()
    then = observer.after_read(result_columns.extras, len(input_columns.task))
    if not observer.keep_parts:
        # Free the parts before ``then`` (a fork): a child would keep them alive while this process
        # reuses their memory, copying every page.
        result_columns = replace(result_columns, extras=())
    if then is not None:
        then()
    part = prepare_profile(
        input_columns,
        result_columns,
        inputs_path=str(inputs_path),
        results_path=str(rollouts_path),
        allow_partial=allow_partial,
        threads=tuning.worker_count(),
    )
    observer.before_writing()
    profile = write_outputs(part, result_columns, paths, inputs_path, input_columns, tuning)
    return ProfileResult(
        completion=profile.completion,
        masked_rollouts=profile.masked_rollouts,
        agent_metrics=profile.agent_metrics,
        repeat_level_metrics=profile.repeat_level_metrics,
        summary=task_summary(profile),
        task_row_count=profile.task_groups,
        paths=paths,
        seconds=time.perf_counter() - started,
        profile=profile,
        row_parts=result_columns.extras,
    )


def _checked(chunk: InputChunk | ResultChunk, what: str) -> None:
    if chunk.error is not None:
        raise DataError(f"{what}[{chunk.error.line - 1}]: {chunk.error.message}")


def profile_rows(
    rows: Sequence[dict[str, Any]],
    results: Sequence[dict[str, Any]],
    allow_partial: bool = False,
    *,
    allow_non_numeric_rewards: bool = False,
) -> ProfileResult:
    """Profile in-memory rows and results; nothing is written (see module doc)."""
    started = time.perf_counter()
    input_chunk = inputs_from_rows(rows)
    _checked(input_chunk, "rows")
    result_chunk = results_from_rows(results, allow_non_numeric_rewards)
    _checked(result_chunk, "results")
    input_columns: InputColumns = merge_inputs([input_chunk])
    result_columns: ResultColumns = merge_results([result_chunk])
    profile = build_profile(
        input_columns, result_columns, inputs_path="rows", results_path="results", allow_partial=allow_partial
    )

    task_rows = [
        orjson.loads(line) for line in task_block(profile.part, result_columns, RowSamples(rows)).splitlines()
    ]
    return ProfileResult(
        completion=profile.completion,
        masked_rollouts=profile.masked_rollouts,
        agent_metrics=orjson.loads(orjson.dumps(profile.agent_metrics)),
        repeat_level_metrics=orjson.loads(orjson.dumps(profile.repeat_level_metrics)),
        summary=task_summary(profile),
        task_row_count=profile.task_groups,
        task_rows=task_rows,
        seconds=time.perf_counter() - started,
        profile=profile,
    )


def profile_results(results: Sequence[dict[str, Any]], agent: str = "agent") -> ProfileResult:
    """Profile verify results of one agent on their own (see module doc)."""
    rows = []
    for position, result in enumerate(results):
        if not isinstance(result, dict):
            raise DataError(f"results[{position}]: expected an object (dict)")
        rows.append(
            {
                TASK_INDEX: result.get(TASK_INDEX),
                ROLLOUT_INDEX: result.get(ROLLOUT_INDEX),
                "agent_ref": {"name": agent},
            }
        )
    # NeMo Gym's /aggregate_metrics API: its behaviour for a non-numeric reward (left out) is kept.
    return profile_rows(rows, results, allow_non_numeric_rewards=True)
