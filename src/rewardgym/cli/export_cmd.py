"""``gym eval export``: a run's tables as Parquet or CSV, or the run into W&B, MLflow or an inspect_ai log.

``gym eval export --rollouts R [--inputs M] [--format parquet|csv|atif] [--out DIR] [--to tables|wandb|mlflow|
inspect …] [++wandb_project=P ++wandb_name=N ++wandb_entity=E] [++mlflow_tracking_uri=U
++mlflow_experiment_name=X ++mlflow_run_name=N]``:

- ``--to tables`` (the default) writes ``<stem>_tasks.<ext>``, ``<stem>_rollouts.<ext>`` and (when
  ``<stem>_analysis.json`` exists) ``<stem>_analysis.<ext>`` and ``<stem>_analysis_summary.<ext>`` next
  to R (or into DIR) and prints one ``Wrote <path> (<n> rows)`` line each (:mod:`rewardgym.export.api`);
- ``--to wandb`` / ``--to mlflow`` send the run to the tracker (:mod:`rewardgym.export.trackers`);
  ``--to inspect`` writes ``<stem>_inspect.json`` (:mod:`rewardgym.export.inspect_log`); ``--to`` may be
  repeated. Each prints where the run went. Without ``--to``, ``++wandb_project`` / ``++mlflow_tracking_uri``
  choose W&B / MLflow; with neither, tables.

``--format atif`` writes ``<stem>_atif.jsonl`` instead (one ATIF trajectory per rollout,
:mod:`rewardgym.protocol.atif`), next to R or into DIR.

Bad input exits 1 with one ``Error: …`` line naming file:line and writes nothing; a bad flag, an unknown
``++key`` or a missing optional extra exits 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rewardgym.cli.main import eval_app
from rewardgym.cli.overrides import split_overrides
from rewardgym.cli.run_files import OptionalInputsOpt, RolloutsOpt
from rewardgym.errors import UsageError
from rewardgym.export.api import Format, export_files
from rewardgym.export.atif_file import ATIF, write_atif
from rewardgym.export.trackers import Target, export_run, require, tracker_settings

_OPTIONS = ("--rollouts", "--inputs", "--format", "--out", "--to")


@eval_app.command(
    "export",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    help="Write the per-task profile, the per-rollout table and the analysis numbers as Parquet or CSV "
    "tables (for pandas, polars, DuckDB…), next to the rollouts; or send the run to W&B or MLflow "
    "(++wandb_project=…, ++mlflow_tracking_uri=…), or write it as an inspect_ai log for 'inspect view'.",
)
def export_command(
    ctx: typer.Context,
    rollouts: RolloutsOpt,
    inputs: OptionalInputsOpt = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="Table file format (parquet, csv), or atif: the rollouts as ATIF trajectories "
            "(<stem>_atif.jsonl).",
        ),
    ] = Format.PARQUET.value,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Folder for the tables / inspect log (default: beside the rollouts)."),
    ] = None,
    to: Annotated[
        list[Target] | None,
        typer.Option("--to", help="Where the run goes (repeatable; default: tables)."),
    ] = None,
) -> None:
    settings = tracker_settings(split_overrides(ctx.args, _OPTIONS))
    if fmt == ATIF:
        if to:
            raise UsageError("--format atif writes the ATIF file; it does not go with --to")
        path, count = write_atif(rollouts, out)
        typer.echo(f"Wrote {path} ({count} trajectories)")
        return
    if fmt not in {f.value for f in Format}:
        raise UsageError(f"--format: {fmt!r} is not one of 'parquet', 'csv', 'atif'")
    # Without --to the tracker keys switch their trackers on, as on 'gym eval profile' and 'gym eval run'.
    targets = list(dict.fromkeys(to or settings.targets() or [Target.TABLES]))
    for target in targets:
        require(target)  # every missing extra is named before anything is written or sent
    for target in targets:
        if target is Target.TABLES:
            result = export_files(rollouts, inputs, Format(fmt), out)
            for path, rows in result.written:
                typer.echo(f"Wrote {path} ({rows} rows)")
            if result.analysis_skipped:
                typer.echo("No analysis tables: run 'gym eval analyze' first to add them.")
            continue
        for line in export_run(target, rollouts, settings, out):
            typer.echo(line)
