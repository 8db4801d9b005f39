"""Reading what sits beside a rollouts file: the failures sidecar, the inputs' row count, file times, and
the profile's agent / repeat-level metrics. Every file is optional; a damaged sidecar line is skipped
(the sidecars inform the report, they are not the data under analysis).

Contract: :func:`output_paths` names every file the analysis writes next to ``<stem>.jsonl``;
:func:`written_files` lists those one analysis writes and :func:`read_beside` those it reads beside the
rollouts (each labelled for :func:`rewardgym.io.outputs.guard_outputs`);
:func:`read_failures` returns failures per class and the task indices that failed; :func:`count_lines`
counts non-empty lines; :func:`input_tasks` lists the task indices of the materialized inputs;
:func:`wall_time` is the time between the materialized inputs being written and the rollouts file's last
change (None when either is missing).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from rewardgym.io.jsonl import iter_object_lines


@dataclass(frozen=True)
class AnalysisPaths:
    analysis: Path
    verdicts: Path
    quality: Path
    report: Path
    failures: Path
    materialized: Path
    agent_metrics: Path
    repeat_metrics: Path
    run_file: Path


def _sibling(rollouts: Path, suffix: str) -> Path:
    stem = rollouts.name[: -len(".jsonl")] if rollouts.name.endswith(".jsonl") else rollouts.name
    return rollouts.with_name(stem + suffix)


def output_paths(rollouts: Path) -> AnalysisPaths:
    return AnalysisPaths(
        analysis=_sibling(rollouts, "_analysis.json"),
        verdicts=_sibling(rollouts, "_rollout_verdicts.jsonl"),
        quality=_sibling(rollouts, "_quality_summary.json"),
        report=_sibling(rollouts, "_report.html"),
        failures=_sibling(rollouts, "_failures.jsonl"),
        materialized=_sibling(rollouts, "_materialized_inputs.jsonl"),
        agent_metrics=_sibling(rollouts, "_agent_metrics.json"),
        repeat_metrics=_sibling(rollouts, "_repeat_level_metrics.json"),
        run_file=_sibling(rollouts, "_run.json"),
    )


def written_files(
    paths: AnalysisPaths, *, report: bool = True, health_only: bool = False
) -> list[tuple[Path, str]]:
    """The files one analysis writes (the health files alone with ``health_only``), labelled."""
    files = [paths.verdicts, paths.quality]
    if not health_only:
        files += [paths.analysis] + ([paths.report] if report else [])
    return [(path, "analysis output (written next to the rollouts)") for path in files]


def read_beside(paths: AnalysisPaths) -> list[tuple[Path, str]]:
    """The run's files the analysis reads beside the rollouts when they exist, labelled. The profile's
    agent / repeat-level metrics are left out: they are derived from the rollouts, and a profile in the
    same command (``profile --report``, a run's tracker export) writes them afresh."""
    files = (paths.failures, paths.materialized, paths.run_file)
    return [(path, "sidecar (read beside the rollouts)") for path in files]


def read_failures(path: Path) -> tuple[dict[str, int], np.ndarray, list[dict[str, Any]]]:
    """``(count per class, task indices, first 20 rows)`` of a failures sidecar (empty when absent)."""
    classes: dict[str, int] = {}
    tasks: list[int] = []
    examples: list[dict[str, Any]] = []
    if not path.is_file():
        return classes, np.zeros(0, np.int64), examples
    with open(path, "rb") as handle:
        for row in iter_object_lines(handle):
            kind = row.get("_ng_failure_class")
            name = kind if isinstance(kind, str) else "unknown"
            classes[name] = classes.get(name, 0) + 1
            if type(row.get("_ng_task_index")) is int:
                tasks.append(row["_ng_task_index"])
            if len(examples) < 20:
                examples.append(row)
    return classes, np.unique(np.array(tasks, np.int64)), examples


def count_lines(path: Path) -> int | None:
    """Non-empty lines of a file (None when it does not exist)."""
    if not path.is_file():
        return None
    count = 0
    blank = 0
    with open(path, "rb") as handle:
        while block := handle.read(1 << 24):
            count += block.count(b"\n")
            blank += block.count(b"\n\n")
        handle.seek(0, 2)
        size = handle.tell()
        if size:
            handle.seek(size - 1)
            if handle.read(1) != b"\n":
                count += 1
    return count - blank


def input_tasks(path: Path) -> np.ndarray | None:
    """The distinct integer ``_ng_task_index`` values of a materialized inputs file (None when it does
    not exist). Read only when a run is incomplete: it is a second pass over the inputs."""
    if not path.is_file():
        return None
    tasks: list[int] = []
    with open(path, "rb") as handle:
        for row in iter_object_lines(handle):
            task = row.get("_ng_task_index")
            if type(task) is int:
                tasks.append(task)
    try:
        return np.unique(np.array(tasks, np.int64))
    except OverflowError:  # an index beyond 64 bits: not a task the rollouts could match
        return np.unique(np.array([t for t in tasks if -(2**63) <= t < 2**63], np.int64))


def wall_time(materialized: Path, rollouts: Path) -> float | None:
    """Seconds from the materialized inputs' last write to the rollouts file's last write."""
    try:
        start, end = materialized.stat().st_mtime, rollouts.stat().st_mtime
    except OSError:
        return None
    return round(end - start, 3) if end >= start else None


def read_run(path: Path) -> dict[str, Any] | None:
    """The run fingerprint ``<stem>_run.json`` (input hashes and the settings that shaped the run), with
    every secret-looking value masked once more (the collector already writes it redacted)."""
    from rewardgym.config.secrets import redact

    value = read_json(path)
    return redact(value) if isinstance(value, dict) else None


def declared_reward_range(run_file: dict[str, Any] | None) -> tuple[float, float] | None:
    """The reward range ``gym eval run`` recorded from the environments' configs (``settings.reward_range``
    of ``<stem>_run.json``), None when the run file has none (then [0, 1] is the default)."""
    settings = run_file.get("settings") if isinstance(run_file, dict) else None
    value = settings.get("reward_range") if isinstance(settings, dict) else None
    if not isinstance(value, list) or len(value) != 2:
        return None
    if not all(type(v) in (int, float) for v in value) or not value[0] <= value[1]:
        return None
    return float(value[0]), float(value[1])


def read_json(path: Path) -> Any:
    """A JSON file's content, or None when it is missing or not JSON."""
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
