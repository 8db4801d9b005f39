"""The three profile files and NeMo Gym's printed summary lines.

Contract:

- :func:`output_paths` names the outputs next to the rollouts file: ``<stem>_reward_profiling.jsonl``,
  ``<stem>_agent_metrics.json`` and ``<stem>_repeat_level_metrics.json``.
- :func:`write_outputs` writes all three files through temp files renamed into place (all-or-nothing
  per file; the two JSON files are compact orjson lists), even when they are empty. The per-task lines
  (see :mod:`rewardgym.profile.write.lines`) are produced in pieces of ``Tuning.piece_groups`` task groups;
  from ``Tuning.parallel_groups`` groups on, by this process and forked children at once, each writing
  its pieces in place into the temp file (see :mod:`rewardgym.profile.write.writer`).
- :func:`summary_lines` are NeMo Gym 0.7.0's seven stdout lines.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import orjson

from rewardgym.errors import DataError
from rewardgym.io.oserrors import writing
from rewardgym.io.outputs import atomic_writer
from rewardgym.profile.compute.align import CompletionSummary
from rewardgym.profile.compute.profiler import Profile, TaskProfile, finish_profile
from rewardgym.profile.read.chunks import gc_paused
from rewardgym.profile.read.columns import InputColumns, ResultColumns
from rewardgym.profile.tuning import Tuning
from rewardgym.profile.write.lines import FileSamples, task_block
from rewardgym.profile.write.writer import MAX_PIECES, advise_write_back, write_pieces


@dataclass(frozen=True)
class OutputPaths:
    """Where a profile is written."""

    reward_profiling: Path
    """``<stem>_reward_profiling.jsonl``: one row per task."""
    agent_metrics: Path
    """``<stem>_agent_metrics.json``: one entry per agent."""
    repeat_level_metrics: Path
    """``<stem>_repeat_level_metrics.json``: one entry per (agent, rollout index)."""


def output_paths(rollouts: str | os.PathLike[str]) -> OutputPaths:
    """The output paths derived from the rollouts file (same folder, rollouts stem + suffix)."""
    base = Path(rollouts)

    def named(suffix: str, extension: str) -> Path:
        return base.with_stem(base.stem + suffix).with_suffix(extension)

    return OutputPaths(
        reward_profiling=named("_reward_profiling", ".jsonl"),
        agent_metrics=named("_agent_metrics", ".json"),
        repeat_level_metrics=named("_repeat_level_metrics", ".json"),
    )


def _write_blocks(handle: IO[bytes], blocks: Iterator[bytes]) -> None:
    unadvised = 0
    for block in blocks:
        handle.write(block)
        unadvised += len(block)
        if unadvised >= 1 << 25:
            handle.flush()
            advise_write_back(handle.fileno())
            unadvised = 0


class _Pieces:
    """The per-task file in pieces of consecutive task groups, produced in any process (see
    :func:`rewardgym.profile.write.writer.write_pieces`)."""

    def __init__(self, profile: TaskProfile, results: ResultColumns, samples: FileSamples, size: int) -> None:
        groups = profile.task_groups
        count = min(max(1, -(-groups // size)), MAX_PIECES)
        self.bounds = [groups * i // count for i in range(count + 1)]
        self._job = (profile, results, samples)

    def __len__(self) -> int:
        return len(self.bounds) - 1

    def __call__(self, piece: int) -> bytes:
        profile, results, samples = self._job
        with gc_paused():
            return task_block(profile, results, samples, self.bounds[piece], self.bounds[piece + 1])


def write_outputs(
    part: TaskProfile,
    results: ResultColumns,
    paths: OutputPaths,
    inputs_path: Path,
    inputs: InputColumns,
    tuning: Tuning | None = None,
) -> Profile:
    """Finish the profile (:func:`finish_profile`) and write the three files; each appears whole or not at
    all (temp file + rename). With parallel writing, the profile is finished while the children write."""
    tuning = tuning or Tuning()
    workers = tuning.worker_count()
    try:
        with (
            atomic_writer(paths.reward_profiling) as lines_handle,
            atomic_writer(paths.agent_metrics) as agent_handle,
            atomic_writer(paths.repeat_level_metrics) as repeat_handle,
        ):
            samples = FileSamples(inputs_path, inputs)
            try:
                pieces = _Pieces(part, results, samples, tuning.piece_groups)
                # A failed write (a full disk…) names the file it was for, not the innermost temp file.
                with writing(paths.reward_profiling):
                    if workers > 1 and part.task_groups >= tuning.parallel_groups:
                        profile = write_pieces(
                            lines_handle, len(pieces), pieces, workers, lambda: finish_profile(part)
                        )
                    else:
                        profile = finish_profile(part)
                        _write_blocks(lines_handle, map(pieces, range(len(pieces))))
            finally:
                samples.close()
            with writing(paths.agent_metrics):
                agent_handle.write(orjson.dumps(profile.agent_metrics))
            with writing(paths.repeat_level_metrics):
                repeat_handle.write(orjson.dumps(profile.repeat_level_metrics))
    except IsADirectoryError as exc:
        raise DataError(f"cannot write output '{exc.filename}': a directory is in the way") from None
    except PermissionError as exc:
        raise DataError(f"cannot write output in '{paths.reward_profiling.parent}': {exc.strerror}") from None
    return profile


def summary_lines(completion: CompletionSummary, masked: int, paths: OutputPaths) -> list[str]:
    """NeMo Gym 0.7.0's printed summary."""
    c = completion
    return [
        "Profiling outputs:",
        f"Reward profile completion: {c.completed_rollout_rows}/{c.expected_rollout_rows} rollout rows "
        f"({c.reward_profile_completion_pct:.2f}%)",
        f"Input rows: {c.total_input_rows} total; {c.complete_input_rows} complete; "
        f"{c.partial_input_rows} partial; {c.missing_input_rows} without rollouts dropped from output.",
        f"Masked from quality metrics: {masked} rollout rows (kept in completion accounting above).",
        f"Reward profiling outputs: {paths.reward_profiling}",
        f"Agent-level metrics: {paths.agent_metrics}",
        f"Repeat-level metrics: {paths.repeat_level_metrics}",
    ]
