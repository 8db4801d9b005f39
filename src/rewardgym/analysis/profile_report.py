"""``gym eval profile --report`` at scale: the analysis in a forked child while the profile finishes.

The protocol lives here, in the library; the CLI only parses its flags and prints the lines.
Contract of :func:`profile_and_report(inputs, rollouts, ..., overlap)` (returns the
:class:`~rewardgym.profile.api.ProfileResult` and a :class:`Report`; prints nothing). The analysis takes
part in the profile through one :class:`ReportObserver` (a :class:`~rewardgym.profile.ProfileObserver`):

- ``overlap=False``: the profile, then the analysis of its rows in this process (``analyze_files`` on
  the ``Scan`` the profile's row hook built) — the serial path;
- ``overlap=True`` (default: from :data:`OVERLAP_FROM` input rows; where ``os.fork`` exists): as soon
  as the profile's readers have returned the rows, their records are joined here (``merge_parts``) and
  a forked child sorts them (the ``Scan``), computes the analysis and writes every file to its temp file
  (synced) while this process finishes the profile (alignment, statistics, its three files). Nothing is
  put in place before the profile is written: the child then waits on a pipe for a go byte, and only
  after it appends the report's last part (the profile's agent- and repeat-level metrics, written by
  then) and renames its files into place. The analysis writes a column or a block at a time, so its
  writing alongside the profile's keeps the peak under 1 GiB at 10^6 rollouts. A profile that fails
  closes the pipe without a go and the child exits, its temp files removed: no analysis file appears.
  The files are byte-identical to the serial path's: same functions, same inputs.
- :func:`finish_report` returns the analysis summary's lines (the child sends them back through a pipe;
  :func:`rewardgym.analysis.summary.result_lines`), which the CLI prints after the profile's. A child that
  failed with an exception sends it back (pickled) and it is raised here, so the user sees exactly the
  one-line error of the serial path (exit non-zero); a child that died otherwise is followed by the serial
  analysis here. Every file is written by temp file + rename, so a failure never leaves a half-written one.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardgym.analysis.scan import ROW_HOOK, Merged, Scan, merge_parts
from rewardgym.analysis.sidecars import output_paths, read_beside, written_files
from rewardgym.io.memory import release_freed_memory
from rewardgym.io.outputs import guard_outputs, remove_stale
from rewardgym.profile import ProfileObserver, ProfileResult, profile_files

OVERLAP_FROM = 200_000
"""Input rows from which ``profile --report`` overlaps the analysis with the profile's tail: below it
the fork and the second copy of the columns are not worth the fraction of a second they save."""

_GO = b"1"
_LINES, _ERROR = b"L", b"X"


class _NoGo(BaseException):
    """The profile failed: the analysis child unwinds (removing its temp file) without writing."""


@dataclass
class _Child:
    pid: int
    gate: int
    """Write end of the go pipe (closed = no go)."""
    out: int
    """Read end of the pipe the child answers on."""


@dataclass
class Report:
    """A ``profile --report``'s analysis in progress: its columns and, when overlapped, its child."""

    inputs: Path
    rollouts: Path
    scan: Scan | None = field(default=None, repr=False)
    """The sorted columns (serial path)."""
    merged: Merged | None = field(default=None, repr=False)
    """The joined, unsorted records (overlapped path: the child sorts them)."""
    materialized: int = 0
    child: _Child | None = field(default=None, repr=False)


class ReportObserver(ProfileObserver):
    """``profile --report``'s part in the profile (a :class:`~rewardgym.profile.ProfileObserver`): its row
    hook takes the analysis' fields from the profile's parse; while the workers read, the analysis'
    imports; once read, the records joined and — overlapped — the analysis child forked."""

    row_hook = ROW_HOOK
    keep_parts = False  # the report holds what it needs: the profile drops the parts before the fork

    def __init__(self, report: Report, overlap: bool | None) -> None:
        self.report = report
        self.overlap = overlap

    def while_reading(self) -> None:
        """Import what the analysis needs beyond the reading (scipy's special functions alone, the
        report) while the profile's workers read: in this process's turn to wait for them, not in a
        thread (the profile forks workers again later; a fork during an import would copy its module lock
        held)."""
        import rewardgym.analysis.report
        import rewardgym.analysis.summary  # noqa: F401
        from rewardgym.stats.special import ufuncs

        ufuncs()

    def after_read(self, parts: tuple[Any, ...], input_rows: int) -> Callable[[], None] | None:
        # The columns are merged here, before any fork, so that the child shares them instead of
        # copying them and the parts' memory is freed (and reused) before a second process keeps it.
        # Sorting them (a gather of every column) is the child's first job when there is one.
        report = self.report
        wanted = input_rows >= OVERLAP_FROM if self.overlap is None else self.overlap
        fork = wanted and hasattr(os, "fork")
        merged = merge_parts(report.rollouts, parts)
        if fork:
            report.merged = merged
        else:
            report.scan = merged.sorted()
        # The profile refuses blank lines, so its input rows are the inputs file's non-empty lines.
        report.materialized = input_rows
        return self._start if fork else None

    def _start(self) -> None:
        from rewardgym.stats.special import ufuncs

        ufuncs()  # scipy's special functions, which both processes use: loaded once, before the fork
        release_freed_memory()  # the freed parts: not a resident part of the child's copy of this process
        self.report.child = _fork(self.report)
        self.report.merged = None  # the child's now: freed here, it is no longer shared
        release_freed_memory()


def profile_and_report(
    inputs: Path,
    rollouts: Path,
    *,
    overlap: bool | None = None,
    allow_partial: bool = False,
    allow_non_numeric_rewards: bool = False,
) -> tuple[ProfileResult, Report]:
    """Profile the run and start (``overlap``; None: from :data:`OVERLAP_FROM` input rows) or prepare its
    analysis (see module doc)."""
    beside = output_paths(rollouts)  # the analysis' outputs refused before the profile reads a byte
    guard_outputs(
        written_files(beside), [(inputs, "--inputs"), (rollouts, "--rollouts"), *read_beside(beside)]
    )
    report = Report(inputs, rollouts)
    try:
        result = profile_files(
            inputs,
            rollouts,
            allow_partial=allow_partial,
            allow_non_numeric_rewards=allow_non_numeric_rewards,
            observer=ReportObserver(report, overlap),
        )
    except BaseException:
        if report.child is not None:
            _abandon(report.child)
        raise
    if report.child is not None:  # the profile's temporaries are freed: not resident beside the child
        release_freed_memory()
    return result, report


def finish_report(report: Report) -> list[str]:
    """The analysis' printed lines, once its files are written (see module doc)."""
    if report.child is not None:
        # The profile is written and its memory freed: the analysis may write its files now. Its
        # writing (the analysis document, the summary, the page: large strings) waits for this so that
        # it never coincides with the profile's own writing.
        gc.collect()  # the profile's objects in reference cycles, before the trim
        release_freed_memory()
        with contextlib.suppress(BrokenPipeError):  # the child died: its (missing) answer says so
            os.write(report.child.gate, _GO)
        _close_gate(report.child)
        status, answer = _collect(report.child)
        if answer[:1] == _LINES and status == 0:
            return answer[1:].decode().splitlines()
        if answer[:1] == _ERROR:
            raise pickle.loads(answer[1:])
        remove_stale(report.rollouts.parent)  # the temp files of a child that died without a word
    return _analyze_here(report)


def _analyze_here(report: Report) -> list[str]:
    from rewardgym.analysis.api import analyze_files
    from rewardgym.analysis.summary import result_lines

    scan, report.scan = report.scan, None
    result = analyze_files(report.inputs, report.rollouts, scan=scan, materialized=report.materialized)
    return result_lines(result)


def _fork(report: Report) -> _Child:
    gate_read, gate_write = os.pipe()
    out_read, out_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; checked through the files it writes and its answers
        os.close(gate_write)
        os.close(out_read)
        _child(report, gate_read, out_write)
    os.close(gate_read)
    os.close(out_write)
    return _Child(pid, gate_write, out_read)


def _child(report: Report, gate: int, out: int) -> None:  # pragma: no cover - runs in the forked child
    """Analyze, wait for the go, write, answer; never returns. GC off: a collection would write to (and
    so copy) every page of the parent's objects this process shares."""
    gc.disable()
    _map_large_blocks()
    code = 1
    try:
        from rewardgym.analysis.api import analyze_files
        from rewardgym.analysis.summary import result_lines

        def wait_for_go() -> None:
            if os.read(gate, 1) != _GO:
                raise _NoGo  # the profile failed: the temp file goes, nothing is said

        try:
            assert report.merged is not None
            scan, report.merged = report.merged.sorted(), None
            release_freed_memory()  # the file-order table, just freed
            result = analyze_files(
                report.inputs,
                report.rollouts,
                scan=scan,
                materialized=report.materialized,
                before_writing=wait_for_go,
                fork_writer=False,  # the profile's own processes hold both cores: a third adds only memory
            )
            answer = _LINES + "\n".join(result_lines(result)).encode()
            code = 0
        except _NoGo:
            os._exit(3)
        except Exception as exc:
            try:
                answer = _ERROR + pickle.dumps(exc)
            except Exception:
                answer = b""  # not picklable: the parent analyzes again, where the error shows itself
        view = memoryview(answer)
        while view:
            view = view[os.write(out, view) :]
    finally:
        os._exit(code)


def _collect(child: _Child) -> tuple[int, bytes]:
    """The child's answer (read to the end before waiting, so a long one cannot block it) and exit code."""
    chunks = []
    while chunk := os.read(child.out, 1 << 16):
        chunks.append(chunk)
    os.close(child.out)
    _, status = os.waitpid(child.pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks)


def _abandon(child: _Child) -> None:
    """The profile failed: close the gate without a go (the child exits unwritten) and reap it."""
    _close_gate(child)  # a failure after the go (while the profile wrote): the child finishes its files
    _collect(child)


def _close_gate(child: _Child) -> None:
    if child.gate >= 0:
        os.close(child.gate)
        child.gate = -1


_M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter: allocations from this size on get their own mapping."""


def _map_large_blocks() -> None:
    """From 8 MiB on, every allocation its own mapping, returned to the system when freed. glibc's default
    raises that threshold as large blocks are freed (up to 32 MiB), after which the analysis' large
    transients (a column's JSON, 10–40 MB) stay resident in the heap once freed, at the moment the
    profile's own writing peaks (measured at 10^6 rollouts: peak 947–964 MiB against 968–1015 MiB).
    A lower threshold saves a little more memory but maps (and faults in) every 1-million-row array
    afresh: +0.3–0.4 s of system time."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):  # not glibc: its allocator decides
        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, 8 << 20)
