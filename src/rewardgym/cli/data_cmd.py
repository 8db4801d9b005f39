"""``gym data select``: reward profiles into a training dataset plus its manifest; ``--check`` verifies one.

``gym data select PROFILE_OR_RUN... --output OUT [filters] [--order … | --schedule …] [--seed N]
[--annotate KEY]`` writes OUT (JSONL rows valid as ``gym eval run --input``) and ``<OUT>.manifest.json``
and prints what it kept; ``gym data select --check MANIFEST`` re-hashes the inputs, rebuilds and compares
(exit 1 naming every mismatch). Bad input exits 1 with one ``Error: …`` line and writes nothing; a bad
flag exits 2. See :mod:`rewardgym.dataset` and ``docs/decide.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rewardgym.cli.main import data_app
from rewardgym.errors import UsageError

_FILTERS = "Filters"
_ORDER = "Order and schedule"


@data_app.command(
    "select",
    help="Write the tasks of one or more reward profiles (files or run folders) as a training dataset — "
    "filtered by pass rate, band, settled, health; per-field quotas or stratified; ordered by difficulty, "
    "a curriculum or a Gaussian schedule — with a manifest to rebuild it exactly (--check verifies one).",
)
def select_command(
    sources: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Profiles (*_reward_profiling.jsonl) or run folders holding one.", show_default=False
        ),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="The dataset to write (JSONL).")
    ] = None,
    manifest: Annotated[
        Path | None, typer.Option("--manifest", help="Where the manifest goes (default <OUT>.manifest.json).")
    ] = None,
    check: Annotated[
        Path | None, typer.Option("--check", help="Verify the dataset of this manifest instead of selecting.")
    ] = None,
    min_pass_rate: Annotated[
        float | None, typer.Option(help="Keep tasks with pass rate >= this.", rich_help_panel=_FILTERS)
    ] = None,
    max_pass_rate: Annotated[
        float | None, typer.Option(help="Keep tasks with pass rate <= this.", rich_help_panel=_FILTERS)
    ] = None,
    band: Annotated[
        list[str] | None,
        typer.Option(
            help="Keep tasks in this band (repeatable): 0, 0-20, 20-40, 40-60, 60-80, 80-100, 100.",
            rich_help_panel=_FILTERS,
        ),
    ] = None,
    settled_only: Annotated[
        bool,
        typer.Option(help="Keep tasks whose 95 % interval lies inside their band.", rich_help_panel=_FILTERS),
    ] = False,
    drop_flagged: Annotated[
        bool,
        typer.Option(
            help="Drop tasks with a task-level health flag (repeats all identical, every rollout cut off, "
            "no successful model call…; needs the run's quality summary). A task whose rollouts are "
            "unhealthy one by one (cut off, empty, no answer) is kept: see --drop-unhealthy-rollouts.",
            rich_help_panel=_FILTERS,
        ),
    ] = False,
    drop_unhealthy_rollouts: Annotated[
        bool,
        typer.Option(
            help="Drop tasks with at least one rollout the health check called unhealthy (cut off, empty "
            "reply, no extracted answer…; needs the run's quality summary).",
            rich_help_panel=_FILTERS,
        ),
    ] = False,
    by: Annotated[
        str | None,
        typer.Option(
            help="Row field (dotted) for --quota, e.g. domain or agent_ref.name.", rich_help_panel=_FILTERS
        ),
    ] = None,
    quota: Annotated[
        int | None, typer.Option(help="At most N tasks per value of --by.", rich_help_panel=_FILTERS)
    ] = None,
    stratify: Annotated[
        str | None, typer.Option(help="Row field whose value shares --limit keeps.", rich_help_panel=_FILTERS)
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Keep at most N tasks.", rich_help_panel=_FILTERS)] = None,
    order: Annotated[
        str, typer.Option(help="original, random, hardest-first or easiest-first.", rich_help_panel=_ORDER)
    ] = "original",
    schedule: Annotated[
        str, typer.Option(help="none, curriculum (stages by difficulty) or gaussian.", rich_help_panel=_ORDER)
    ] = "none",
    stages: Annotated[int, typer.Option(help="Stages of a schedule.", rich_help_panel=_ORDER)] = 4,
    stage_size: Annotated[
        int | None,
        typer.Option(
            help="Rows per Gaussian stage (default: tasks / stages, rounded up).", rich_help_panel=_ORDER
        ),
    ] = None,
    mean_start: Annotated[
        float, typer.Option(help="Gaussian: mean pass rate of the first stage.", rich_help_panel=_ORDER)
    ] = 0.9,
    mean_end: Annotated[
        float, typer.Option(help="Gaussian: mean pass rate of the last stage.", rich_help_panel=_ORDER)
    ] = 0.1,
    sigma: Annotated[
        float, typer.Option(help="Gaussian: width over pass rate.", rich_help_panel=_ORDER)
    ] = 0.15,
    replace: Annotated[
        bool,
        typer.Option(help="Gaussian: a task may be drawn again in a later stage.", rich_help_panel=_ORDER),
    ] = False,
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
    annotate: Annotated[
        str | None, typer.Option(help="Add the measured pass rate, interval and repeats under this row key.")
    ] = None,
    pass_threshold: Annotated[float, typer.Option(help="A rollout passes when reward >= this.")] = 1.0,
    settle_epsilon: Annotated[float, typer.Option(help="Width of the 0 % / 100 % bands for settled.")] = 0.05,
    drop_run_params: Annotated[
        bool,
        typer.Option(
            help="Remove the request parameters the run added to every row (--temperature…; "
            "from the run's *_run.json)."
        ),
    ] = False,
    duplicates: Annotated[
        str, typer.Option(help="The same task in several profiles: pool (add rollouts) or refuse.")
    ] = "pool",
) -> None:
    from rewardgym.dataset import SelectOptions, check_manifest, select_files

    if check is not None:
        if sources or output is not None:
            raise UsageError("--check takes only the manifest: no profiles, no --output")
        result = check_manifest(check)
        if result.problems:
            for problem in result.problems:
                typer.echo(f"MISMATCH: {problem}", err=True)
            typer.echo(f"Error: '{result.dataset}' does not match its manifest '{check}'", err=True)
            raise typer.Exit(1)
        typer.echo(
            f"OK: '{result.dataset}' matches '{check}': {result.rows} rows, {result.inputs} input "
            f"file{'s' if result.inputs != 1 else ''} unchanged, rebuilt byte-identical"
        )
        return
    if not sources:
        raise UsageError("name at least one profile (*_reward_profiling.jsonl) or run folder")
    if output is None:
        raise UsageError("--output is required (the dataset to write)")
    options = SelectOptions(
        min_pass_rate=min_pass_rate,
        max_pass_rate=max_pass_rate,
        bands=tuple(band or ()),
        settled_only=settled_only,
        drop_flagged=drop_flagged,
        drop_unhealthy_rollouts=drop_unhealthy_rollouts,
        by=by,
        quota=quota,
        stratify=stratify,
        limit=limit,
        order=order,  # type: ignore[arg-type]  # validated by SelectOptions.validate
        schedule=schedule,  # type: ignore[arg-type]
        stages=stages,
        stage_size=stage_size,
        mean_start=mean_start,
        mean_end=mean_end,
        sigma=sigma,
        replace=replace,
        annotate=annotate,
        seed=seed,
        pass_threshold=pass_threshold,
        settle_epsilon=settle_epsilon,
        duplicates=duplicates,  # type: ignore[arg-type]
        drop_run_params=drop_run_params,
    )
    written = select_files(sources, output, options, manifest)
    counts = written.built.counts
    merged = f", {counts['merged_duplicates']} duplicate rows pooled" if counts["merged_duplicates"] else ""
    typer.echo(f"Read {counts['profile_rows']} profile rows: {counts['tasks']} tasks{merged}")
    reasons = ", ".join(f"{k} {v}" for k, v in counts["dropped_by_reason"].items())
    typer.echo(
        f"Kept {counts['kept']} tasks, dropped {counts['dropped']}" + (f" ({reasons})" if reasons else "")
    )
    if counts.get("kept_with_flags"):
        typer.echo(
            f"Note: {counts['kept_with_flags']} kept tasks have task-level health flags "
            "(--drop-flagged drops them)"
        )
    if counts.get("kept_with_unhealthy_rollouts"):
        typer.echo(
            f"Note: {counts['kept_with_unhealthy_rollouts']} kept tasks have unhealthy rollouts "
            "(--drop-unhealthy-rollouts drops them)"
        )
    kept_bands = ", ".join(f"{label} {c['kept']}" for label, c in counts["per_band"].items() if c["kept"])
    typer.echo(f"Kept by band: {kept_bands or 'none'}")
    for stage in written.built.stages:
        target = f"target {stage['target_mean']:.2f}, " if "target_mean" in stage else ""
        mean = "n/a" if stage["mean_pass_rate"] is None else f"{stage['mean_pass_rate']:.3f}"
        typer.echo(f"Stage {stage['stage']}: {stage['rows']} rows ({target}mean pass rate {mean})")
    typer.echo(f"Wrote {written.output} ({written.built.rows} rows)")
    typer.echo(f"Wrote {written.manifest}")
