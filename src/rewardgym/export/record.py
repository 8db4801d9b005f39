"""What a tracker receives about one run, gathered from the run's files with every secret removed.

Contract of :func:`run_record(rollouts, tables)`:

- reads, beside ``<stem>.jsonl``: ``<stem>_reward_profiling.jsonl`` (required, through
  :func:`rewardgym.export.api.export_files`, which also writes the Parquet tables into ``tables``),
  ``<stem>_agent_metrics.json``, ``<stem>_aggregate_metrics.json``, ``<stem>_run.json``,
  ``<stem>_analysis.json`` and ``<stem>_report.html`` (each optional);
- ``metrics`` (flat name → number): ``key/<agent>/<metric>`` (the aggregate's key metrics),
  ``agent/<agent>/<metric>`` (the profiler's agent metrics), ``profile/tasks``, ``profile/mean_reward``,
  ``profile/ci_low`` / ``profile/ci_high`` (95 % t-interval over tasks), ``profile/band/<band>`` (tasks
  per pass-rate band: ``0``, ``0-20``, ``20-40``, ``40-60``, ``60-80``, ``80-100`` — open at 100 —,
  ``100``) and ``analysis/<dotted field>`` for every number of the analysis document outside
  ``settings``, ``per_task`` and ``per_rollout``; booleans count as 0/1, nulls and non-finite numbers are
  left out;
- ``texts`` (flat name → string): the analysis's string fields (``analysis/health.verdict`` …);
- ``params`` (flat dotted name → JSON scalar): the run's settings (``<stem>_run.json``: config and
  materialization) and the analysis settings, passed through :func:`rewardgym.config.secrets.redact`
  (every secret-named key masked, known credential shapes masked in every string) — the files were
  written redacted already; this is the second lock;
- ``bands``: ``(label, tasks, share)`` per pass-rate band (none when rewards are not pass rates);
- ``tasks``: the per-task table (task, agent, rollouts, mean reward, band and interval when analysed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import polars as pl

from rewardgym.config.secrets import redact
from rewardgym.errors import DataError
from rewardgym.export.api import ExportResult, export_files
from rewardgym.profile import BAND_LABELS
from rewardgym.profile.compute.report import rates_summary
from rewardgym.protocol.keys import TASK_INDEX

_ANALYSIS_SKIP = ("settings", "per_task", "per_rollout")
_RUN_FILE = "run.run_file."  # the run's settings again: sent once, as params


@dataclass(frozen=True)
class RunRecord:
    name: str
    """The run's stem (``rollouts`` for ``out/rollouts.jsonl``)."""
    rollouts: Path
    metrics: dict[str, float]
    texts: dict[str, str]
    params: dict[str, Any]
    """Flat dotted name → JSON scalar (lists as their JSON text)."""
    bands: list[tuple[str, int, float]]
    tasks: pl.DataFrame
    tables: ExportResult
    report: Path | None
    files: list[Path] = field(default_factory=list)
    """The run's JSON outputs worth keeping beside the tables (analysis, aggregate metrics)."""


def sibling(rollouts: Path, suffix: str) -> Path:
    return rollouts.with_name(rollouts.name.removesuffix(".jsonl") + suffix)


def load_json(path: Path) -> Any:
    """A whole JSON file (None when absent); malformed → one ``file:line`` error."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DataError(f"cannot read '{path}': {exc.strerror}") from None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise DataError(f"{path}:{exc.lineno}: malformed JSON ({exc.msg})") from None


def flat_items(value: Any, prefix: str) -> dict[str, Any]:
    """Dotted ``prefix.key`` → scalar of nested objects; lists as their JSON text."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(flat_items(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list):
        return {prefix: orjson.dumps(value).decode()}
    return {prefix: value}


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(float(value)):
        return float(value)
    return None


def _agent_name(row: dict[str, Any]) -> str:
    ref = row.get("agent_ref")
    name = ref.get("name") if isinstance(ref, dict) else None
    return name if isinstance(name, str) else "agent"


def _agent_metrics(rollouts: Path, metrics: dict[str, float]) -> None:
    for suffix, block, prefix in (
        ("_aggregate_metrics.json", "key_metrics", "key"),
        ("_agent_metrics.json", None, "agent"),
    ):
        doc = load_json(sibling(rollouts, suffix))
        for row in doc if isinstance(doc, list) else []:
            if not isinstance(row, dict):
                continue
            values = row.get(block) if block else row
            for key, value in (values if isinstance(values, dict) else {}).items():
                number = _number(value)
                if number is not None:
                    metrics[f"{prefix}/{_agent_name(row)}/{key}"] = number


def band_slug(label: str) -> str:
    """A band label as a plain metric name: ``(0–20 %]`` → ``0-20``, ``100 %`` → ``100``."""
    return label.strip("()[] %").replace("–", "-").removesuffix(" %")


def _profile_summary(tasks: pl.DataFrame, metrics: dict[str, float]) -> list[tuple[str, int, float]]:
    if "mean/reward" not in tasks.columns:
        return []
    rates = tasks["mean/reward"].cast(pl.Float64).drop_nulls().to_numpy()
    summary = rates_summary(np.asarray(rates[~np.isnan(rates)], dtype=np.float64))
    metrics["profile/tasks"] = float(summary.tasks)
    if summary.mean_reward is not None:
        metrics["profile/mean_reward"] = summary.mean_reward
    if summary.interval is not None:
        metrics["profile/ci_low"], metrics["profile/ci_high"] = summary.interval
    if summary.bands is None:
        return []
    bands = [
        (label, count, count / summary.tasks if summary.tasks else 0.0)
        for label, count in zip(BAND_LABELS, summary.bands, strict=True)
    ]
    for label, count, _ in bands:
        metrics[f"profile/band/{band_slug(label)}"] = float(count)
    return bands


def _task_table(tasks: pl.DataFrame, analysis: Any) -> pl.DataFrame:
    keep = [c for c in (TASK_INDEX, "agent_ref.name", "num_rollouts", "mean/reward") if c in tasks.columns]
    table = tasks.select(keep)
    per_task = analysis.get("per_task") if isinstance(analysis, dict) else None
    if isinstance(per_task, dict) and per_task.get(TASK_INDEX) is not None:
        bands = analysis.get("uncertainty", {}).get("bands", [])
        labels = [b.get("band") for b in bands if isinstance(b, dict)]
        extra = pl.DataFrame(
            {
                TASK_INDEX: per_task.get(TASK_INDEX),
                "band": [
                    labels[b] if type(b) is int and 0 <= b < len(labels) else None
                    for b in per_task.get("band", [])
                ],
                "low": per_task.get("low"),
                "high": per_task.get("high"),
            },
            strict=False,
        )
        if TASK_INDEX in table.columns and extra.height == table.height:
            table = table.join(extra, on=TASK_INDEX, how="left", maintain_order="left")
    return table


def _params(rollouts: Path, analysis: Any) -> dict[str, Any]:
    settings = load_json(sibling(rollouts, "_run.json"))
    tree: dict[str, Any] = {}
    if isinstance(settings, dict) and isinstance(settings.get("settings"), dict):
        tree["run"] = settings["settings"]
    if isinstance(analysis, dict) and isinstance(analysis.get("settings"), dict):
        tree["analysis"] = analysis["settings"]
    return flat_items(redact(tree), "")


def run_record(rollouts: Path, tables: Path) -> RunRecord:
    """Everything a tracker receives about the run at ``rollouts`` (see module doc)."""
    exported = export_files(rollouts, out=tables)
    tasks = pl.read_parquet(exported.written[0][0])
    metrics: dict[str, float] = {}
    texts: dict[str, str] = {}
    _agent_metrics(rollouts, metrics)
    bands = _profile_summary(tasks, metrics)
    analysis_path = sibling(rollouts, "_analysis.json")
    analysis = load_json(analysis_path)
    if isinstance(analysis, dict):
        for key, value in flat_items(
            {k: v for k, v in analysis.items() if k not in _ANALYSIS_SKIP}, ""
        ).items():
            if key.startswith(_RUN_FILE):
                continue
            number = _number(value)
            if number is not None:
                metrics[f"analysis/{key}"] = number
            elif isinstance(value, str) and not value.startswith(("[", "{")):
                texts[f"analysis/{key}"] = value
    texts = redact(texts)
    report = sibling(rollouts, "_report.html")
    files = [p for p in (analysis_path, sibling(rollouts, "_aggregate_metrics.json")) if p.is_file()]
    return RunRecord(
        name=rollouts.name.removesuffix(".jsonl"),
        rollouts=rollouts,
        metrics=metrics,
        texts=texts,
        params=_params(rollouts, analysis),
        bands=bands,
        tasks=_task_table(tasks, analysis),
        tables=exported,
        report=report if report.is_file() else None,
        files=files,
    )
