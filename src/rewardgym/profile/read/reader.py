"""Reading both profile inputs, in parallel byte-range chunks when the files are large.

Contract of :func:`read_files`:

- a missing, non-regular (a pipe, ``/dev/stdin``, a device: see :mod:`rewardgym.io.inputs`) or
  unreadable file is a :class:`~rewardgym.errors.DataError` naming the file and its option (``--inputs`` /
  ``--rollouts``);
- files larger than ``Tuning.parallel_from`` bytes in total are split into chunks read by forked worker
  processes; smaller ones are read in this process. A worker leaves each chunk's compact numpy columns
  (never parsed rows) in a private spool folder (memory-backed ``/dev/shm`` when it has room) and goes
  on at once; this process merges the chunks as they arrive, in file order. At most ``2 × workers + 2``
  chunks are queued or waiting beyond the one being merged, so the spool stays bounded; the workers die
  with this process (``PR_SET_PDEATHSIG``), and the spool folder carries the temp-name marker of
  :mod:`rewardgym.io.outputs`, so :func:`remove_stale_spools` of a later run deletes one a ``kill -9``
  left behind;
- the first bad line of a file (malformed JSON, blank, not an object, missing or non-integer index, a
  rollout row in the inputs file, a measured rollout whose ``reward`` is not a number — unless
  ``allow_non_numeric_rewards``) is reported as ``<path>:<line>: …`` whichever process read it — the
  inputs file first;
- a non-empty rollouts file none of whose rows has ``response`` or ``reward`` is rejected as a
  materialized-inputs file given as ``--rollouts``;
- the ``observer``'s (:class:`~rewardgym.profile.read.observer.ProfileObserver`) row hook runs in the
  rollouts reader, on every row of the same parse (what it made of each chunk comes back as
  ``ResultColumns.extras``), and its ``while_reading`` in this process while the workers read.
"""

from __future__ import annotations

import functools
import itertools
import multiprocessing
import os
import pickle
import shutil
import stat
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.pool import AsyncResult, Pool
from pathlib import Path
from typing import Any, TypeVar

from rewardgym.errors import DataError
from rewardgym.io import children
from rewardgym.io.inputs import refuse_special_input
from rewardgym.io.jsonl import parse_line
from rewardgym.io.oserrors import writing
from rewardgym.io.outputs import make_temp_dir, remove_stale
from rewardgym.profile.read.chunks import InputChunk, LineError, ResultChunk
from rewardgym.profile.read.columns import InputColumns, InputMerger, ResultColumns, ResultMerger
from rewardgym.profile.read.observer import ProfileObserver
from rewardgym.profile.read.scan_inputs import scan_inputs
from rewardgym.profile.read.scan_results import scan_results
from rewardgym.profile.tuning import Tuning

_Chunk = TypeVar("_Chunk", InputChunk, ResultChunk)
_SPOOL = Path("/dev/shm")
"""Where workers leave the chunks they read (memory-backed where the system has it)."""
_SPOOL_ROOM = 1 << 30
"""Free space ``_SPOOL`` needs for the chunks waiting there (a few times ``Tuning.chunk_bytes``)."""
SPOOL_LABEL = "rewardgym-profile"
"""Spool folders are ``<_SPOOL or the temp folder>/rewardgym-profile.rgtmp-<pid>-…`` (see
:mod:`rewardgym.io.outputs`), so a later run finds and removes those of a killed run."""


def check_readable(path: Path, option: str) -> int:
    """The file's size, or a :class:`DataError` saying why it cannot be read."""
    refuse_special_input(path, option)
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


def _line_error(error: LineError, line: int, path: Path) -> DataError:
    """The message for the bad line ``line`` of ``path``."""
    if error.message is None:
        try:
            parse_line(error.raw, path, line)  # raises the precise JSON/encoding error
        except DataError as exc:
            return exc
        return DataError(f"{path}:{line}: not a JSON object")
    return DataError(f"{path}:{line}: {error.message}")


def _scan_all(
    inputs: Path,
    rollouts: Path,
    input_ranges: list[tuple[int, int]],
    result_ranges: list[tuple[int, int]],
    workers: int,
    observer: ProfileObserver,
    allow_non_numeric_rewards: bool,
) -> tuple[InputMerger, ResultMerger]:
    row_hook = observer.row_hook
    scan_rollouts: Callable[[str, int, int], ResultChunk] = scan_results
    if allow_non_numeric_rewards or row_hook is not None:
        scan_rollouts = functools.partial(
            scan_results, allow_non_numeric_rewards=allow_non_numeric_rewards, row_hook=row_hook
        )
    input_merger = InputMerger(input_ranges[-1][1])
    result_merger = ResultMerger(result_ranges[-1][1])
    if workers <= 1:
        observer.while_reading()
        _check(
            _fold(
                (scan_inputs(str(inputs), a, b) for a, b in input_ranges), input_ranges, inputs, input_merger
            )
        )
        _check(
            _fold(
                (scan_rollouts(str(rollouts), a, b) for a, b in result_ranges),
                result_ranges,
                rollouts,
                result_merger,
            )
        )
        return input_merger, result_merger
    context = multiprocessing.get_context("fork")
    # Rollout chunks are the expensive ones: queue them first so both cores stay busy to the end.
    jobs: list[tuple[Any, ...]] = [(scan_rollouts, str(rollouts), a, b) for a, b in result_ranges]
    jobs += [(scan_inputs, str(inputs), a, b) for a, b in input_ranges]
    spool = make_temp_dir(_spool_folder(), SPOOL_LABEL)
    children.prepare()
    try:
        with context.Pool(workers, initializer=children.die_with_parent, initargs=(os.getpid(),)) as pool:
            window = _Window(pool, jobs, str(spool), ahead=2 * workers + 2)
            observer.while_reading()  # the workers exist already: threads started now are not forked
            # Chunks are merged here as they arrive (rollouts first: they are read first), while the
            # workers read on. A bad inputs line is reported before a bad rollouts line.
            result_error = _fold(window.take(len(result_ranges)), result_ranges, rollouts, result_merger)
            window.discard(len(result_ranges))  # the chunks after a bad line, if any
            _check(_fold(window.take(len(input_ranges)), input_ranges, inputs, input_merger))
            _check(result_error)
    finally:
        shutil.rmtree(spool, ignore_errors=True)
    return input_merger, result_merger


class _Window:
    """The chunk jobs, submitted to the pool at most ``ahead`` beyond the one being merged, so the chunks
    waiting in the spool stay bounded (a few times ``Tuning.chunk_bytes``) however far the workers run
    ahead of the merging."""

    def __init__(self, pool: Pool, jobs: list[tuple[Any, ...]], spool: str, ahead: int) -> None:
        self._pool, self._jobs, self._spool = pool, iter(jobs), spool
        self._queue: deque[AsyncResult[str]] = deque()
        self.taken = 0
        for _ in range(ahead):
            self._submit()

    def _submit(self) -> None:
        job = next(self._jobs, None)
        if job is not None:
            self._queue.append(self._pool.apply_async(_spooled, (*job, self._spool)))

    def _next(self) -> str:
        name = self._queue.popleft().get()
        self.taken += 1
        self._submit()
        return name

    def take(self, count: int) -> Iterator[Any]:
        """The next ``count`` chunks, in order (the caller may stop early)."""
        stop = self.taken + count
        while self.taken < stop:
            yield _unspool(self._next())

    def discard(self, upto: int) -> None:
        """Skip (and delete) the chunks before position ``upto`` that were not taken."""
        while self.taken < upto:
            os.unlink(self._next())


def _spool_folder() -> Path:
    """Memory-backed ``/dev/shm`` when it has room to spare (a container's may hold only 64 MiB), else the
    system's temporary folder."""
    try:
        info = os.statvfs(_SPOOL)
    except OSError:
        return Path(tempfile.gettempdir())
    return _SPOOL if info.f_bavail * info.f_frsize >= _SPOOL_ROOM else Path(tempfile.gettempdir())


def remove_stale_spools() -> list[Path]:
    """Delete the spool folders that killed profiler runs left behind (their owner is gone)."""
    return [path for folder in {_SPOOL, Path(tempfile.gettempdir())} for path in remove_stale(folder)]


def _spooled(scan: Callable[[str, int, int], _Chunk], path: str, start: int, end: int, spool: str) -> str:
    """Worker: scan a chunk and leave it, pickled, in a file of ``spool``; return the file's name.

    Handing the chunk back through the pool's pipe would keep the worker waiting until this process
    has read all of it; a file lets the worker go on with its next chunk at once."""
    chunk = scan(path, start, end)
    descriptor, name = tempfile.mkstemp(suffix=".chunk", dir=spool)
    with writing(name), os.fdopen(descriptor, "wb") as handle:  # a full spool is named, not a bare errno
        pickle.dump(chunk, handle, protocol=pickle.HIGHEST_PROTOCOL)
    return name


def _unspool(name: str) -> Any:
    with open(name, "rb") as handle:
        chunk = pickle.load(handle)
    os.unlink(name)
    return chunk


def _check(error: DataError | None) -> None:
    if error is not None:
        raise error


def _fold(
    chunks: Iterable[_Chunk],
    ranges: list[tuple[int, int]],
    path: Path,
    merger: InputMerger | ResultMerger,
) -> DataError | None:
    """Merge the chunks (of these byte ranges), in file order, up to the first bad line: its error (with
    its line number in the file) is returned."""
    for chunk, (start, end) in zip(chunks, ranges, strict=False):
        if chunk.error is not None:
            # Every earlier chunk is complete, so its line count is exact.
            return _line_error(chunk.error, merger.lines + chunk.error.line, path)
        merger.add(chunk, end - start)  # type: ignore[arg-type]
    return None


def read_files(
    inputs: Path,
    rollouts: Path,
    tuning: Tuning | None = None,
    *,
    observer: ProfileObserver | None = None,
    allow_non_numeric_rewards: bool = False,
) -> tuple[InputColumns, ResultColumns]:
    """Columns of both files (see module doc); the ``observer``'s ``while_reading`` runs in this process
    meanwhile and its row hook on every rollout row (its parts come back as ``ResultColumns.extras``).
    A measured rollout whose ``reward`` is not a number is a bad line unless ``allow_non_numeric_rewards``."""
    tuning = tuning or Tuning()
    input_size = check_readable(inputs, "--inputs")
    result_size = check_readable(rollouts, "--rollouts")
    count = tuning.worker_count() if input_size + result_size >= tuning.parallel_from else 1
    chunk_bytes = tuning.chunk_bytes
    if count > 1:
        # Smaller chunks than the target when needed, so every worker gets several.
        chunk_bytes = max(1 << 16, min(chunk_bytes, (input_size + result_size) // (4 * count) or 1))
    input_merger, result_merger = _scan_all(
        inputs,
        rollouts,
        chunk_ranges(input_size, chunk_bytes),
        chunk_ranges(result_size, chunk_bytes),
        count,
        observer or ProfileObserver(),
        allow_non_numeric_rewards,
    )
    if result_merger.rows and not result_merger.with_outcome:
        raise DataError(
            f"'{rollouts}' (--rollouts) has no 'response' or 'reward' in any row: it looks like a "
            "materialized inputs file, not rollouts (did you swap --inputs and --rollouts?)"
        )
    return input_merger.result(), result_merger.result()
