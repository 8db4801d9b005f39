"""The three profile files and NeMo Gym's printed summary lines.

Contract:

- :func:`output_paths` names the outputs next to the rollouts file: ``<stem>_reward_profiling.jsonl``,
  ``<stem>_agent_metrics.json`` and ``<stem>_repeat_level_metrics.json``.
- :func:`task_lines` yields the per-task JSONL lines (orjson, one compact object per line) for a range of
  task groups. Keys: ``_ng_task_index``, the stat keys, ``agent_ref`` (fan-out only), ``sample``,
  ``num_rollouts``, ``expected_num_rollouts``, ``missing_num_rollouts``, ``reward_profile_completion_pct``,
  ``rollout_infos``.
- :func:`write_outputs` writes all three files through temp files renamed into place (all-or-nothing
  per file; the two JSON files are compact orjson lists), even when they are empty.
- :func:`summary_lines` are NeMo Gym 0.7.0's seven stdout lines.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt
import orjson

from rewardgym.errors import DataError
from rewardgym.io.jsonl import atomic_writer
from rewardgym.profile.align import CompletionSummary
from rewardgym.profile.chunks import gc_paused
from rewardgym.profile.columns import InputColumns, ResultColumns
from rewardgym.profile.extract import ROLLOUT_INDEX, TASK_INDEX
from rewardgym.profile.profiler import Profile
from rewardgym.profile.statistics import stat_keys, stat_matrix
from rewardgym.profile.tuning import Tuning

FloatArray = npt.NDArray[np.float64]

SampleLoader = Callable[[int], bytes]
"""Returns the serialized ``sample`` (the input row without its two index keys) of an input row."""


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


_ROW = (
    b'{"_ng_task_index":%d,%b"sample":%b,"num_rollouts":%d,"expected_num_rollouts":%d,'
    b'"missing_num_rollouts":%d,"reward_profile_completion_pct":%b,"rollout_infos":[%b]}\n'
)


def _stat_fragments(keys: list[str], matrix: FloatArray) -> list[bytes]:
    """Per group, its ``"<stat>/<field>":value,`` pairs as orjson writes them (NaN values left out)."""
    if matrix.shape[1] == 0:
        return [b""] * matrix.shape[0]
    template = b"".join(orjson.dumps(key) + b":%b," for key in keys)
    has_nan = np.isnan(matrix).any(axis=1)
    fragments: list[bytes] = [b""] * matrix.shape[0]
    if not has_nan.all():
        # Column by column: one C-level split per column, then one ``%`` per group over the zipped
        # columns (rows with a NaN are formatted below instead).
        columns = [
            orjson.dumps(np.ascontiguousarray(column), option=orjson.OPT_SERIALIZE_NUMPY)[1:-1].split(b",")
            for column in matrix.T
        ]
        fragments = [template % values for values in zip(*columns, strict=True)]
    for position in np.flatnonzero(has_nan).tolist():
        items = {k: v for k, v in zip(keys, matrix[position].tolist(), strict=True) if not math.isnan(v)}
        fragments[position] = orjson.dumps(items)[1:-1] + b"," if items else b""
    return fragments


def _percent(n: int, expected: int, cache: dict[tuple[int, int], bytes]) -> bytes:
    found = cache.get((n, expected))
    if found is None:
        found = cache[(n, expected)] = orjson.dumps(100.0 if expected == 0 else 100.0 * n / expected)
    return found


def task_lines(
    profile: Profile,
    results: ResultColumns,
    load_sample: SampleLoader,
    first: int = 0,
    stop: int | None = None,
) -> Iterator[bytes]:
    """The per-task JSONL lines of task groups ``[first, stop)`` (each ends with a newline)."""
    stats = profile.statistics
    groups = stats.tasks
    stop = len(groups) if stop is None else stop
    if stop <= first:
        return
    fragments = _stat_fragments(stat_keys(stats.fields), stat_matrix(groups.stats, first, stop))
    if stats.fan_out:
        labels = stats.label_of_group[first:stop].tolist()
        named = [orjson.dumps({"name": label}) for label in stats.table.labels]
        fragments = [
            f + b'"agent_ref":' + named[label] + b"," for f, label in zip(fragments, labels, strict=True)
        ]
    tasks = stats.task_of_group[first:stop].tolist()
    lengths = groups.lengths[first:stop].tolist()
    expected = profile.expected[first:stop].tolist()
    samples = profile.sample_input[first:stop].tolist()
    row_start = int(groups.starts[first])
    row_stop = int(groups.starts[stop - 1] + groups.lengths[stop - 1])
    starts = (groups.starts[first:stop] - row_start).tolist()
    infos = results.infos
    rows = profile.result_of_row[groups.rows[row_start:row_stop]]
    ordered = [
        infos[a:b]
        for a, b in zip(results.info_start[rows].tolist(), results.info_end[rows].tolist(), strict=True)
    ]
    percent_cache: dict[tuple[int, int], bytes] = {}
    join = b",".join
    for i in range(stop - first):
        n, e, start = lengths[i], expected[i], starts[i]
        yield _ROW % (
            tasks[i],
            fragments[i],
            load_sample(samples[i]),
            n,
            e,
            e - n,
            _percent(n, e, percent_cache),
            join(ordered[start : start + n]),
        )


class FileSampleLoader:
    """Reads ``sample`` rows from the materialized-input file (nearby reads share one buffer)."""

    def __init__(self, path: Path, inputs: InputColumns) -> None:
        self._handle = open(path, "rb", buffering=1 << 20)  # noqa: SIM115 - closed in close()
        self._offsets = inputs.offset
        self._lengths = inputs.length
        self._sample_lengths = inputs.sample_length

    def __call__(self, row: int) -> bytes:
        handle = self._handle
        handle.seek(int(self._offsets[row]))
        keep = int(self._sample_lengths[row])
        if keep >= 0:
            return handle.read(keep) + b"}"
        sample = orjson.loads(handle.read(int(self._lengths[row])))
        sample.pop(TASK_INDEX, None)
        sample.pop(ROLLOUT_INDEX, None)
        return orjson.dumps(sample)

    def close(self) -> None:
        self._handle.close()


def row_sample_loader(rows: Sequence[dict[str, Any]]) -> SampleLoader:
    """Samples of in-memory input rows."""

    def load(row: int) -> bytes:
        sample = dict(rows[row])
        sample.pop(TASK_INDEX, None)
        sample.pop(ROLLOUT_INDEX, None)
        return orjson.dumps(sample)

    return load


_LINE_JOB: dict[str, tuple[Profile, ResultColumns, Path, InputColumns]] = {}
"""What forked line-writing workers work on (set by the parent just before it forks them)."""


def _write_lines(handle: IO[bytes], lines: Iterator[bytes]) -> None:
    buffer: list[bytes] = []
    size = 0
    for line in lines:
        buffer.append(line)
        size += len(line)
        if size >= 1 << 22:
            handle.write(b"".join(buffer))
            buffer.clear()
            size = 0
    handle.write(b"".join(buffer))


def _write_part(first: int, stop: int, part: str) -> None:
    """Worker: write the lines of task groups ``[first, stop)`` to ``part``."""
    profile, results, inputs_path, inputs = _LINE_JOB["job"]
    loader = FileSampleLoader(inputs_path, inputs)
    try:
        with gc_paused(), open(part, "wb") as handle:
            _write_lines(handle, task_lines(profile, results, loader, first, stop))
    finally:
        loader.close()


def _append_file(target: IO[bytes], part: str) -> None:
    target.flush()
    with open(part, "rb") as source:
        remaining = os.fstat(source.fileno()).st_size
        try:
            while remaining > 0:
                copied = os.copy_file_range(source.fileno(), target.fileno(), remaining)
                if copied == 0:
                    break
                remaining -= copied
        except OSError:
            source.seek(os.fstat(source.fileno()).st_size - remaining)
            target.seek(0, os.SEEK_END)
            shutil.copyfileobj(source, target, 1 << 22)
            return
    target.seek(0, os.SEEK_END)


def _task_lines_parallel(
    handle: IO[bytes],
    folder: Path,
    profile: Profile,
    results: ResultColumns,
    inputs_path: Path,
    inputs: InputColumns,
    workers: int,
) -> None:
    groups = profile.task_groups
    pieces = max(workers * 4, 1)
    bounds = [groups * i // pieces for i in range(pieces + 1)]
    parts: list[str] = []
    try:
        for _ in range(pieces):
            descriptor, name = tempfile.mkstemp(prefix=".profile-part.", suffix=".tmp", dir=folder)
            os.close(descriptor)
            parts.append(name)
        _LINE_JOB["job"] = (profile, results, inputs_path, inputs)
        context = multiprocessing.get_context("fork")
        with context.Pool(workers) as pool:
            jobs = [
                pool.apply_async(_write_part, (bounds[i], bounds[i + 1], parts[i])) for i in range(pieces)
            ]
            for job, part in zip(jobs, parts, strict=True):
                job.get()
                _append_file(handle, part)
                os.unlink(part)
    finally:
        _LINE_JOB.clear()
        for part in parts:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(part)


def write_outputs(
    profile: Profile,
    results: ResultColumns,
    paths: OutputPaths,
    inputs_path: Path,
    inputs: InputColumns,
    tuning: Tuning | None = None,
) -> None:
    """Write the three files; each appears whole or not at all (temp file + rename)."""
    tuning = tuning or Tuning()
    workers = tuning.worker_count()
    agent_bytes = orjson.dumps(profile.agent_metrics)
    repeat_bytes = orjson.dumps(profile.repeat_level_metrics)
    try:
        with (
            atomic_writer(paths.reward_profiling) as lines_handle,
            atomic_writer(paths.agent_metrics) as agent_handle,
            atomic_writer(paths.repeat_level_metrics) as repeat_handle,
        ):
            if workers > 1 and profile.task_groups >= tuning.parallel_groups:
                folder = paths.reward_profiling.parent
                _task_lines_parallel(lines_handle, folder, profile, results, inputs_path, inputs, workers)
            else:
                loader = FileSampleLoader(inputs_path, inputs)
                try:
                    with gc_paused():
                        _write_lines(lines_handle, task_lines(profile, results, loader))
                finally:
                    loader.close()
            agent_handle.write(agent_bytes)
            repeat_handle.write(repeat_bytes)
    except IsADirectoryError as exc:
        raise DataError(f"cannot write output '{exc.filename}': a directory is in the way") from None
    except PermissionError as exc:
        raise DataError(f"cannot write output in '{paths.reward_profiling.parent}': {exc.strerror}") from None


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
