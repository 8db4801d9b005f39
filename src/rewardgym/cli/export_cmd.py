"""``gym eval export``: a run's profile, rollouts and analysis as Parquet or CSV tables.

``gym eval export --rollouts R [--inputs M] [--format parquet|csv] [--out DIR]`` writes
``<stem>_tasks.<ext>``, ``<stem>_rollouts.<ext>`` and (when ``<stem>_analysis.json`` exists)
``<stem>_analysis.<ext>`` and ``<stem>_analysis_summary.<ext>`` next to R (or into DIR) and prints one
``Wrote <path> (<n> rows)`` line each (see :mod:`rewardgym.export.api`). Bad input exits 1 with one
``Error: …`` line naming file:line and writes nothing; a bad flag exits 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rewardgym.cli.main import eval_app
from rewardgym.cli.run_files import OptionalInputsOpt, RolloutsOpt
from rewardgym.export.api import Format, export_files


@eval_app.command(
    "export",
    help="Write the per-task profile, the per-rollout table and the analysis numbers as Parquet or CSV "
    "tables (for pandas, polars, DuckDB…), next to the rollouts.",
)
def export_command(
    rollouts: RolloutsOpt,
    inputs: OptionalInputsOpt = None,
    fmt: Annotated[Format, typer.Option("--format", help="Table file format.")] = Format.PARQUET,
    out: Annotated[
        Path | None, typer.Option("--out", help="Folder for the tables (default: beside the rollouts).")
    ] = None,
) -> None:
    result = export_files(rollouts, inputs, fmt, out)
    for path, rows in result.written:
        typer.echo(f"Wrote {path} ({rows} rows)")
    if result.analysis_skipped:
        typer.echo("No analysis tables: run 'gym eval analyze' first to add them.")
