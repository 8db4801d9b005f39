"""``gym eval analyze`` as a function: read a run, compute the analysis, write its files.

Contract of :func:`analyze_files(inputs, rollouts, settings)`:

- reads ``rollouts`` (and, when they sit beside it, ``<stem>_failures.jsonl``, the materialized inputs,
  the profile's agent / repeat-level metrics); ``inputs`` may be None (then the sibling materialized
  inputs file, if any, is used for the count of materialized rollouts);
- ``strict=True`` (analyze) makes an unreadable rollout line a :class:`DataError` naming ``file:line``
  before anything is written; ``strict=False`` (health-check) turns it into a ``record_unreadable`` finding;
- writes, each by temp file + rename: ``<stem>_analysis.json``, ``<stem>_rollout_verdicts.jsonl``,
  ``<stem>_quality_summary.json`` and (``report=True``) ``<stem>_report.html``; ``health_only=True``
  writes just the two health files; before reading, an output that is one of the files it reads (given
  or beside the rollouts) or exists as anything but a regular file is refused
  (:func:`~rewardgym.io.outputs.guard_outputs`); ``scan`` is an already-read rollouts file and
  ``materialized`` the number of materialized rollouts when already known (``profile --report``: the
  profile counted them);
  ``before_writing`` is called once the analysis is computed and every file written to its temp file
  (but the report's last part: the profile's metrics, read after it), before any file is in place
  (``profile --report`` holds a forked analysis there until the profile is written; an exception
  there removes the temp files). ``fork_writer=False`` writes the verdicts file in this process even at
  scale (a caller that already runs beside other busy processes: one more would only add memory).
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import numpy as np
import orjson

from rewardgym.analysis.document import DEFAULT_REWARD_RANGE, Analysis, RunFacts, Settings, analyze_columns
from rewardgym.analysis.health_output import health_summary, write_summary, write_verdicts
from rewardgym.analysis.scan import Scan, scan_rollouts
from rewardgym.analysis.sidecars import (
    AnalysisPaths,
    count_lines,
    declared_reward_range,
    input_tasks,
    output_paths,
    read_beside,
    read_failures,
    read_run,
    wall_time,
    written_files,
)
from rewardgym.analysis.trajectory_evidence import read_trajectory_evidence
from rewardgym.errors import DataError
from rewardgym.io.memory import release_freed_memory
from rewardgym.io.outputs import atomic_writer, guard_outputs

_ARRAYS = ("per_task", "per_rollout")


def document_bytes(document: dict[str, Any]) -> bytes:
    """The document as JSON: indented, except the long per-task / per-rollout arrays (one line each)."""
    buffer = io.BytesIO()
    write_document(buffer, document)
    return buffer.getvalue()


def write_document(handle: IO[bytes], document: dict[str, Any]) -> None:
    """Write :func:`document_bytes` to ``handle`` one array at a time (at 10^6 rollouts the whole text is
    72 MB: built at once, it and its pieces would be held together)."""
    head = {k: v for k, v in document.items() if k not in _ARRAYS}
    handle.write(orjson.dumps(head, option=orjson.OPT_INDENT_2)[:-2])
    for key in _ARRAYS:
        if key in document:
            handle.write(b',\n  "' + key.encode() + b'": {\n')
            for position, (name, values) in enumerate(document[key].items()):
                handle.write(b",\n" if position else b"")
                handle.write(b'    "' + name.encode() + b'": ')
                handle.write(orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY))
            handle.write(b"\n  }")
    handle.write(b"\n}\n")


def _uncollected(
    scan: Scan, materialized: int | None, inputs: Path, failure_tasks: np.ndarray
) -> np.ndarray | None:
    """Tasks of the inputs with neither a rollout line nor a failure record. The inputs are read again
    only when the run is incomplete: fewer distinct (task, rollout) keys than materialized rows."""
    columns = scan.columns
    keys = int(
        np.count_nonzero(
            (columns.task[1:] != columns.task[:-1]) | (columns.rollout[1:] != columns.rollout[:-1])
        )
    )
    if materialized is None or materialized <= keys + (len(columns) > 0):
        return None
    tasks = input_tasks(inputs)
    if tasks is None:
        return None
    return np.setdiff1d(np.setdiff1d(tasks, columns.task), failure_tasks).astype(np.int64)


@dataclass(frozen=True)
class AnalyzeResult:
    analysis: Analysis
    scan: Scan
    paths: AnalysisPaths
    written: tuple[Path, ...]
    seconds: float


def analyze_files(
    inputs: Path | None,
    rollouts: Path,
    settings: Settings | None = None,
    *,
    strict: bool = True,
    report: bool = True,
    health_only: bool = False,
    workers: int | None = None,
    scan: Scan | None = None,
    materialized: int | None = None,
    before_writing: Callable[[], object] | None = None,
    fork_writer: bool = True,
) -> AnalyzeResult:
    """Analyze one run and write its files (see module doc)."""
    started = time.perf_counter()
    settings = settings or Settings()
    if inputs is not None and not inputs.is_file():
        raise DataError(f"Input file not found: '{inputs}' (--inputs)")
    paths = output_paths(rollouts)
    guard_outputs(
        written_files(paths, report=report, health_only=health_only),
        [(rollouts, "--rollouts"), (inputs, "--inputs"), *read_beside(paths)],
    )  # before the rollouts are read: a refused output costs nothing and changes nothing
    if scan is None:
        scan = scan_rollouts(rollouts, workers=workers)
    if strict and scan.unreadable:
        line, error = scan.unreadable[0]
        raise DataError(f"{rollouts}:{line}: {error}")
    if strict and len(scan.columns) == 0:
        raise DataError(f"{rollouts}: no rollouts to analyze")
    classes, failure_tasks, _ = read_failures(paths.failures)
    materialized_file = inputs if inputs is not None else paths.materialized
    if materialized is None:
        materialized = count_lines(materialized_file)
    run_file = read_run(paths.run_file)
    if settings.reward_range is None:  # no --reward-range: what the environments declared, else [0, 1]
        settings = replace(settings, reward_range=declared_reward_range(run_file) or DEFAULT_REWARD_RANGE)
    facts = RunFacts(
        rollouts_path=str(rollouts),
        inputs_path=None if inputs is None else str(inputs),
        materialized=materialized,
        failure_classes=classes,
        failure_tasks=failure_tasks,
        unreadable=len(scan.unreadable),
        wall_time_s=wall_time(materialized_file, rollouts),
        run_file=run_file,
        uncollected_tasks=_uncollected(scan, materialized, materialized_file, failure_tasks),
        trajectory=read_trajectory_evidence(Path(rollouts), scan.columns, settings.ignored_checks),
    )
    analysis = analyze_columns(scan.columns, settings, facts)
    release_freed_memory()  # the statistics' temporaries: not resident while the files are written
    written: list[Path] = []
    # Every file is written to its temp file first and renamed into place only when the block ends,
    # after ``before_writing`` (the gate of ``profile --report``): all the writing is done while the
    # profile may still be running, nothing is in place before it is written, and an error anywhere
    # (or no go) leaves no file behind.
    with contextlib.ExitStack() as stack:
        handles: list[IO[bytes]] = []

        def temp(path: Path) -> IO[bytes]:
            written.append(path)
            handles.append(stack.enter_context(atomic_writer(path)))
            return handles[-1]

        if not health_only:
            write_document(temp(paths.analysis), analysis.document)
        verdicts_file = temp(paths.verdicts)

        def verdicts() -> None:
            write_verdicts(verdicts_file, scan.columns, analysis.health, scan.unreadable, str(rollouts))
            verdicts_file.flush()  # a forked child ends with os._exit, which flushes nothing

        # At scale the verdicts file (a pure function of the columns, written alone) is written by a
        # forked child while this process writes the rest: the second core is otherwise idle here. It
        # forks before this process writes to the file, so the file's buffer it inherits is empty.
        big = len(scan.columns) >= FORK_FROM
        child = _start(verdicts) if fork_writer and not health_only and big else None
        finish_report: Callable[[], None] | None = None
        try:
            if child is None:
                verdicts()
            summary = health_summary(scan.columns, analysis.health, len(scan.unreadable))
            write_summary(temp(paths.quality), summary)
            del summary
            release_freed_memory()
            if report and not health_only:
                from rewardgym.analysis.report import start_report

                finish_report = start_report(temp(paths.report), paths, analysis, scan)
        finally:
            if child is not None and not _finished(child):
                # the child failed: again here, where an error surfaces with its own message
                verdicts_file.seek(0)
                verdicts_file.truncate()
                verdicts()
        if before_writing is not None:
            for handle in handles:  # on disk now, while the profile runs: the renames after the go are quick
                handle.flush()
                os.fsync(handle.fileno())
            before_writing()
        if finish_report is not None:
            finish_report()  # the profile's metrics, written by now
    return AnalyzeResult(analysis, scan, paths, tuple(written), time.perf_counter() - started)


FORK_FROM = 200_000
"""Rollout lines from which the verdicts file is written by a forked child (see ``analyze_files``)."""


def _start(job: Callable[[], None]) -> int | None:
    """Run ``job`` in a forked child; its pid, or None when this platform cannot fork (then run it here).

    The child only reads what the parent built (copy-on-write: numpy buffers stay shared) and exits with
    ``os._exit``, skipping interpreter teardown; the cyclic GC is off in it, since a collection would write
    to (and so copy) every page holding a tracked object."""
    if not hasattr(os, "fork"):
        return None
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; its work is checked through the file it writes
        gc.disable()
        code = 1
        try:
            job()
            code = 0
        finally:
            os._exit(code)
    return pid


def _finished(pid: int) -> bool:
    """Wait for a child of :func:`_start`; True when it succeeded."""
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0
