"""``gym eval export`` as a function: a run's profile, rollouts and analysis as Parquet or CSV tables.

Contract of :func:`export_files(rollouts, inputs, fmt, out)`:

- reads ``<stem>.jsonl`` (the rollouts), ``<stem>_failures.jsonl`` (optional),
  ``<stem>_reward_profiling.jsonl`` (required: missing → a :class:`DataError` telling to run
  ``gym eval profile`` first) and ``<stem>_analysis.json`` (optional), all beside the rollouts;
- writes into ``out`` (default: the rollouts' folder, created when missing) ``<stem>_tasks.<ext>``,
  ``<stem>_rollouts.<ext>`` and, when the analysis exists, ``<stem>_analysis.<ext>`` (per task) and
  ``<stem>_analysis_summary.<ext>`` (one row); the tables are :mod:`rewardgym.export.tables`';
- refuses before reading anything an output that is one of the inputs or is not a regular file
  (:func:`rewardgym.io.outputs.guard_outputs`); every table is built in memory before the first is
  written, so bad input (one ``file:line`` error) leaves nothing behind; each file is written to a temp
  file beside it and renamed (:func:`rewardgym.io.outputs.atomic_writer`; the umask applies).
- CSV text that a spreadsheet would run as a formula (a cell starting with ``=``, ``+``, ``-``, ``@``, a
  tab or a carriage return — a model's answer can be anything) is written with a leading ``'``, as
  spreadsheets expect (:func:`defuse_formulas`); numbers are numbers and Parquet keeps text as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import polars as pl

from rewardgym.errors import DataError
from rewardgym.export.tables import analysis_tables, rollouts_table, tasks_table
from rewardgym.io.outputs import atomic_writer, guard_outputs


class Format(StrEnum):
    PARQUET = "parquet"
    CSV = "csv"


@dataclass(frozen=True)
class ExportPaths:
    profile: Path
    failures: Path
    analysis_json: Path
    tasks: Path
    rollouts: Path
    analysis: Path
    summary: Path


def export_paths(rollouts: Path, fmt: Format = Format.PARQUET, out: Path | None = None) -> ExportPaths:
    stem = rollouts.name.removesuffix(".jsonl")
    folder = rollouts.parent if out is None else out
    ext = fmt.value
    return ExportPaths(
        profile=rollouts.with_name(f"{stem}_reward_profiling.jsonl"),
        failures=rollouts.with_name(f"{stem}_failures.jsonl"),
        analysis_json=rollouts.with_name(f"{stem}_analysis.json"),
        tasks=folder / f"{stem}_tasks.{ext}",
        rollouts=folder / f"{stem}_rollouts.{ext}",
        analysis=folder / f"{stem}_analysis.{ext}",
        summary=folder / f"{stem}_analysis_summary.{ext}",
    )


@dataclass(frozen=True)
class ExportResult:
    written: tuple[tuple[Path, int], ...]
    """``(path, rows)`` of every file written, in order."""
    analysis_skipped: bool
    """No ``<stem>_analysis.json`` beside the rollouts: no analysis tables."""


FORMULA_START = r"^[=+\-@\t\r]"
"""What makes a spreadsheet read a CSV cell as a formula (OWASP's list)."""


def defuse_formulas(table: pl.DataFrame) -> pl.DataFrame:
    """``table`` with every text cell a spreadsheet would run as a formula prefixed with ``'``."""
    texts = [name for name, dtype in table.schema.items() if dtype == pl.String]
    return table.with_columns(
        pl.when(pl.col(name).str.contains(FORMULA_START))
        .then(pl.lit("'") + pl.col(name))
        .otherwise(pl.col(name))
        .alias(name)
        for name in texts
    )


def write_table(table: pl.DataFrame, path: Path, fmt: Format) -> None:
    with atomic_writer(path) as handle:
        if fmt is Format.PARQUET:
            table.write_parquet(handle)
        else:
            defuse_formulas(table).write_csv(handle)


def export_files(
    rollouts: Path, inputs: Path | None = None, fmt: Format = Format.PARQUET, out: Path | None = None
) -> ExportResult:
    """Export one run's tables (see module doc)."""
    paths = export_paths(rollouts, fmt, out)
    if not rollouts.exists():
        raise DataError(f"Input file not found: '{rollouts}' (--rollouts)")
    if inputs is not None and not inputs.is_file():
        raise DataError(f"Input file not found: '{inputs}' (--inputs)")
    if not paths.profile.is_file():
        given = (
            inputs
            if inputs is not None
            else rollouts.with_name(rollouts.name.removesuffix(".jsonl") + "_materialized_inputs.jsonl")
        )
        raise DataError(
            f"no profile beside the rollouts ('{paths.profile}' is missing): run "
            f"'gym eval profile --inputs {given} --rollouts {rollouts}' first"
        )
    if out is not None and out.exists() and not out.is_dir():
        raise DataError(f"--out '{out}' exists and is not a folder")
    has_analysis = paths.analysis_json.is_file()
    outputs = [(paths.tasks, "tasks table"), (paths.rollouts, "rollouts table")]
    if has_analysis:
        outputs += [(paths.analysis, "analysis table"), (paths.summary, "analysis summary table")]
    guard_outputs(
        outputs,
        [
            (rollouts, "--rollouts"),
            (inputs, "--inputs"),
            (paths.profile, "profile"),
            (paths.failures, "failures"),
            (paths.analysis_json, "analysis"),
        ],
    )
    tables = [
        (paths.tasks, tasks_table(paths.profile)),
        (paths.rollouts, rollouts_table(rollouts, paths.failures)),
    ]
    if has_analysis:
        per_task, summary = analysis_tables(paths.analysis_json)
        tables += [(paths.analysis, per_task), (paths.summary, summary)]
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    for path, table in tables:
        write_table(table, path, fmt)
    return ExportResult(tuple((path, table.height) for path, table in tables), not has_analysis)
