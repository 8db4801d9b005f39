"""``gym eval compare`` as a function: read the runs, match their tasks, compute, write the outputs.

Contract of :func:`compare_files(runs, rule, settings, ...)`:

- ``runs`` are ``(path, inputs or None)`` pairs (two or more); each is read by :func:`.runs.read_run`;
- tasks not matched in every run are an error naming each run's file, count and examples, unless
  ``allow_unmatched`` (then they are left out and reported); no matched task at all is always an error;
- everything is computed before anything is written; then ``output`` (``compare.json``) and, unless
  ``html`` is None, the page, each by temp file + rename (:func:`rewardgym.io.outputs.atomic_write_bytes`).
  Bad input therefore leaves no output, and an earlier output stays as it was.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from rewardgym.compare.diagnose import differing_fields
from rewardgym.compare.document import Settings, compare_document
from rewardgym.compare.match import Matching, match_runs
from rewardgym.compare.runs import KeyRule, RunTasks, is_profile, read_run
from rewardgym.errors import DataError
from rewardgym.io.outputs import atomic_write_bytes

_NUMPY = orjson.OPT_SERIALIZE_NUMPY


def _dump(value: Any, indent: str = "") -> bytes:
    """JSON with nested objects indented and every list of plain values (a column) on one line."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        items = [b'"' + str(k).encode() + b'": ' + _dump(v, inner) for k, v in value.items()]
        return b"{\n" + b",\n".join(inner.encode() + i for i in items) + b"\n" + indent.encode() + b"}"
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        items = [inner.encode() + _dump(v, inner) for v in value]
        return b"[\n" + b",\n".join(items) + b"\n" + indent.encode() + b"]"
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and np.isnan(value).any():
        # NaN is not JSON: a number that cannot be computed is null.
        return orjson.dumps([None if math.isnan(v) else v for v in value.tolist()])
    return orjson.dumps(value, option=_NUMPY)


def document_bytes(document: dict[str, Any]) -> bytes:
    return _dump(document) + b"\n"


def default_labels(paths: Sequence[Path]) -> list[str]:
    """Each run's file stem (``_reward_profiling`` dropped); numbered when two stems are equal."""
    stems = []
    for path in paths:
        name = path.name
        for suffix in ("_reward_profiling.jsonl", ".jsonl"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
                break
        stems.append(name)
    if len(set(stems)) == len(stems):
        return stems
    parents = [f"{p.parent.name}/{s}" if p.parent.name else s for p, s in zip(paths, stems, strict=True)]
    if len(set(parents)) == len(parents):
        return parents
    return [f"{k + 1}:{s}" for k, s in enumerate(stems)]


def _unmatched_error(runs: list[RunTasks], matching: Matching, labels: list[str], rule: KeyRule) -> DataError:
    parts = []
    for label, run, info in zip(labels, runs, matching.unmatched, strict=True):
        if info["tasks"]:
            shown = "; ".join(f"task {e['task']}: {e['shown']!r}" for e in info["examples"][:2])
            parts.append(f"'{run.path}' ({label}): {info['tasks']} of {run.task.shape[0]} tasks ({shown})")
    fields = [] if rule.field is not None else differing_fields(runs, matching, rule.ignore)
    if fields:
        # Name what differs (e.g. the sampling temperature of two otherwise equal runs) and the exact flag.
        named = ", ".join(f"{path} ({a} vs {b})" for path, a, b in fields[:3])
        flags = " ".join(f"--ignore-key {path}" for path, _, _ in fields[:3])
        advice = (
            f"The unmatched tasks differ in {named}. If that differs on purpose, add {flags}; otherwise "
            "compare runs of the same tasks, match by a field (--task-key FIELD), or compare only the "
            "common tasks (--allow-unmatched)"
        )
    else:
        advice = (
            "Compare the same tasks, match by a field (--task-key FIELD), leave fields that differ on "
            "purpose out (--ignore-key PATH), or compare only the common tasks (--allow-unmatched)"
        )
    return DataError(f"tasks do not match across the runs — {' | '.join(parts)}. {advice}")


@dataclass(frozen=True)
class CompareResult:
    document: dict[str, Any]
    written: tuple[Path, ...]
    seconds: float


def compare_files(
    runs: Sequence[tuple[Path, Path | None]],
    settings: Settings,
    *,
    labels: Sequence[str] | None = None,
    allow_unmatched: bool = False,
    output: Path | None = None,
    html: Path | None = None,
) -> CompareResult:
    """Compare the runs and write the outputs (see module doc)."""
    started = time.perf_counter()
    if len(runs) < 2:
        raise DataError("compare needs at least two runs")
    rule = KeyRule(
        field=None if settings.task_key is None else tuple(settings.task_key.split(".")),
        ignore=tuple(tuple(k.split(".")) for k in settings.ignore_keys),
        pass_threshold=settings.pass_threshold,
    )
    names = list(labels) if labels else default_labels([path for path, _ in runs])
    read = [read_run(path, None if is_profile(path) else inputs, rule) for path, inputs in runs]
    matching = match_runs(read)
    if matching.unmatched_total and not allow_unmatched:
        raise _unmatched_error(read, matching, names, rule)
    if matching.tasks < 2:
        raise DataError(
            f"{matching.tasks} task(s) in every run with counted rollouts; a comparison needs at least 2: "
            + ", ".join(f"'{r.path}' has {r.task.shape[0]} tasks" for r in read)
        )
    document = compare_document(read, names, matching, settings)
    written: list[Path] = []
    page = None
    if html is not None:
        from rewardgym.compare.report import render_page

        page = render_page(document)
    if output is not None:
        atomic_write_bytes(output, document_bytes(document))
        written.append(output)
    if html is not None and page is not None:
        atomic_write_bytes(html, page)
        written.append(html)
    return CompareResult(document, tuple(written), time.perf_counter() - started)
