"""Reading both profile inputs, in parallel byte-range chunks when the files are large.

Contract of :func:`read_files`:

- a missing, non-regular or unreadable file is a :class:`~rewardgym.errors.DataError` naming the file
  and its option (``--inputs`` / ``--rollouts``);
- files larger than ``Tuning.parallel_from`` bytes in total are split into chunks read by forked worker
  processes (each returns compact numpy columns, so the parent never holds parsed rows); smaller ones
  are read in this process;
- the first bad line of a file (malformed JSON, blank, not an object, missing or non-integer index, a
  rollout row in the inputs file) is reported as ``<path>:<line>: …`` whichever process read it — the
  inputs file first;
- a non-empty rollouts file none of whose rows has ``response`` or ``reward`` is rejected as a
  materialized-inputs file given as ``--rollouts``.
"""

from __future__ import annotations

import itertools
import multiprocessing
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from rewardgym.errors import DataError
from rewardgym.io.jsonl import parse_line
from rewardgym.profile.chunks import InputChunk, LineError, ResultChunk
from rewardgym.profile.columns import InputColumns, ResultColumns, merge_inputs, merge_results
from rewardgym.profile.scan_inputs import scan_inputs
from rewardgym.profile.scan_results import scan_results
from rewardgym.profile.tuning import Tuning

_Chunk = TypeVar("_Chunk", InputChunk, ResultChunk)


def check_readable(path: Path, option: str) -> int:
    """The file's size, or a :class:`DataError` saying why it cannot be read."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise DataError(f"Input file not found: '{path}' ({option})") from None
    except OSError as exc:
        raise DataError(f"Cannot read '{path}' ({option}): {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise DataError(f"'{path}' ({option}) is a directory, not a JSONL file")
    try:
        with open(path, "rb") as handle:
            handle.read(1)
    except PermissionError:
        raise DataError(f"'{path}' ({option}) is not readable (permission denied)") from None
    except OSError as exc:
        raise DataError(f"Cannot read '{path}' ({option}): {exc.strerror}") from None
    return info.st_size


def chunk_ranges(size: int, chunk_bytes: int) -> list[tuple[int, int]]:
    """``[start, end)`` byte ranges of about ``chunk_bytes`` covering ``size`` bytes (at least one)."""
    count = max(1, -(-size // chunk_bytes))
    bounds = [size * i // count for i in range(count + 1)]
    return list(itertools.pairwise(bounds))


def _raise_first_error(chunks: Sequence[InputChunk] | Sequence[ResultChunk], path: Path) -> None:
    before = 0
    for chunk in chunks:
        error: LineError | None = chunk.error
        if error is not None:
            line = before + error.line
            if error.message is None:
                parse_line(error.raw, path, line)  # raises the precise JSON/encoding error
                raise DataError(f"{path}:{line}: not a JSON object")
            raise DataError(f"{path}:{line}: {error.message}")
        before += chunk.lines


def _scan_all(
    inputs: Path,
    rollouts: Path,
    input_ranges: list[tuple[int, int]],
    result_ranges: list[tuple[int, int]],
    workers: int,
    while_reading: Callable[[], object] | None,
) -> tuple[list[InputChunk], list[ResultChunk]]:
    if workers <= 1:
        if while_reading is not None:
            while_reading()
        return (
            [scan_inputs(str(inputs), a, b) for a, b in input_ranges],
            [scan_results(str(rollouts), a, b) for a, b in result_ranges],
        )
    context = multiprocessing.get_context("fork")
    with context.Pool(workers) as pool:
        # Rollout chunks are the expensive ones: queue them first so both cores stay busy to the end.
        result_jobs = [pool.apply_async(scan_results, (str(rollouts), a, b)) for a, b in result_ranges]
        input_jobs = [pool.apply_async(scan_inputs, (str(inputs), a, b)) for a, b in input_ranges]
        if while_reading is not None:
            while_reading()  # the workers exist already: threads started now are not forked
        input_chunks = _collect(input_jobs, inputs)
        result_chunks = _collect(result_jobs, rollouts)
    return input_chunks, result_chunks


def _collect(jobs: Sequence[multiprocessing.pool.AsyncResult[_Chunk]], path: Path) -> list[_Chunk]:
    chunks: list[_Chunk] = []
    for job in jobs:
        chunk = job.get()
        chunks.append(chunk)
        if chunk.error is not None:
            _raise_first_error(chunks, path)  # earlier chunks are complete: the line number is exact
    return chunks


def read_files(
    inputs: Path,
    rollouts: Path,
    tuning: Tuning | None = None,
    *,
    while_reading: Callable[[], object] | None = None,
) -> tuple[InputColumns, ResultColumns]:
    """Columns of both files (see module doc); ``while_reading`` runs in this process meanwhile."""
    tuning = tuning or Tuning()
    input_size = check_readable(inputs, "--inputs")
    result_size = check_readable(rollouts, "--rollouts")
    count = tuning.worker_count() if input_size + result_size >= tuning.parallel_from else 1
    chunk_bytes = tuning.chunk_bytes
    if count > 1:
        # Smaller chunks than the target when needed, so every worker gets several.
        chunk_bytes = max(1 << 16, min(chunk_bytes, (input_size + result_size) // (4 * count) or 1))
    input_chunks, result_chunks = _scan_all(
        inputs,
        rollouts,
        chunk_ranges(input_size, chunk_bytes),
        chunk_ranges(result_size, chunk_bytes),
        count,
        while_reading,
    )
    _raise_first_error(input_chunks, inputs)
    _raise_first_error(result_chunks, rollouts)
    result_rows = sum(len(c.task) for c in result_chunks)
    if result_rows and not any(c.with_outcome for c in result_chunks):
        raise DataError(
            f"'{rollouts}' (--rollouts) has no 'response' or 'reward' in any row: it looks like a "
            "materialized inputs file, not rollouts (did you swap --inputs and --rollouts?)"
        )
    return merge_inputs(input_chunks), merge_results(result_chunks)
