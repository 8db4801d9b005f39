"""``gym eval profile``: reward profiles of a rollout collection (NeMo Gym 0.7.0-compatible outputs).

``gym eval profile --inputs X_materialized_inputs.jsonl --rollouts X.jsonl [--allow-partial-rollouts]
[--allow-non-numeric-rewards] [--report] [++allow_partial_rollouts=True]
[++allow_non_numeric_rewards=True] [++wandb_project=P …] [++mlflow_tracking_uri=U …]``
writes ``X_reward_profiling.jsonl``, ``X_agent_metrics.json`` and ``X_repeat_level_metrics.json`` next
to the rollouts, prints NeMo Gym's summary lines, then a table of tasks by pass-rate band, the mean
reward with its 95 % interval and the time the profile took; ``--report`` then runs ``gym eval analyze``
on the same files (see :mod:`rewardgym.cli.analyze_cmd`); ``++wandb_project=…`` /
``++mlflow_tracking_uri=…`` (NeMo Gym's exporter keys, :mod:`rewardgym.export.trackers`) then send the run
to W&B / MLflow, as
``gym eval export --to wandb|mlflow`` does (a missing extra is reported before profiling).
Bad input exits 1 with one ``Error: …`` line (a measured
rollout whose ``reward`` is not a number included, unless ``--allow-non-numeric-rewards``: NeMo Gym's
silent behaviour); a bad flag or override exits 2.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from rewardgym.cli.main import eval_app
from rewardgym.cli.overrides import split_overrides
from rewardgym.cli.run_files import INPUTS_HELP, ROLLOUTS_HELP
from rewardgym.errors import UsageError
from rewardgym.profile import BAND_LABELS, ProfileResult, profile_files, summary_lines
from rewardgym.profile.compute.report import rates_summary

if TYPE_CHECKING:
    from rewardgym.export.trackers import Target, TrackerSettings

_OPTIONS = ("--inputs", "--rollouts", "--allow-partial-rollouts", "--allow-non-numeric-rewards", "--report")
_OVERRIDE_KEYS = ("allow_partial_rollouts", "allow_non_numeric_rewards")
_TRACKER_PREFIXES = ("wandb_", "mlflow_")
_TRUE = frozenset(("true", "1", "yes"))
_FALSE = frozenset(("false", "0", "no"))


def parse_bool(text: str, key: str) -> bool:
    """``True``/``true``/``1``/``yes`` or ``False``/``false``/``0``/``no``; anything else is a usage error."""
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise UsageError(f"override '{key}' expects true or false, got {text!r}")


def overrides_of(tokens: list[str]) -> dict[str, bool]:
    """The ``++key=true|false`` overrides among the tokens, by key (the last one of a key wins)."""
    values: dict[str, bool] = {}
    for token in tokens:
        body = token.lstrip("+")
        key, sep, text = body.partition("=")
        if not sep:
            raise UsageError(f"override {token!r} must be written ++key=value")
        if key not in _OVERRIDE_KEYS:
            raise UsageError(
                f"unknown override {token!r}: 'gym eval profile' accepts only "
                "++allow_partial_rollouts=true|false, ++allow_non_numeric_rewards=true|false and the tracker "
                "keys ++wandb_project=… / ++mlflow_tracking_uri=… (see 'gym eval export')"
            )
        values[key] = parse_bool(text, key)
    return values


def _flag(option: bool, overrides: dict[str, bool], key: str, name: str) -> bool:
    """A switch given as ``--name`` and/or ``++key=…`` (the override decides; a contradiction is an error)."""
    override = overrides.get(key)
    if override is not None and option and not override:
        raise UsageError(f"{name} contradicts ++{key}=false")
    return option if override is None else override


def _print_summary(result: ProfileResult, seconds: float, rollouts: Path) -> None:
    """Our addition after NeMo Gym's lines: pass-rate bands, mean reward with interval, profiling time. For
    an adaptive run the bands and the mean come from the per-task estimates unbiased under its stopping rule
    (each task's s / n, in the profile, is pulled toward ½ by it)."""
    console = Console(highlight=False, soft_wrap=True)
    summary = result.summary
    adaptive = None
    if result.task_row_count:
        from rewardgym.analysis.design import adaptive_task_rates

        adaptive = adaptive_task_rates(rollouts)
    if adaptive is not None:
        summary = rates_summary(adaptive[0])
        console.print(
            "Adaptive run: pass rates below are per-task estimates unbiased under its stopping rule "
            "(each task's s / n in the profile is pulled toward 1/2 by it)."
        )
    if summary.bands is not None:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column("Pass rate (per-task mean reward)")
        table.add_column("Tasks", justify="right")
        table.add_column("Share", justify="right")
        for label, count in zip(BAND_LABELS, summary.bands, strict=True):
            share = 100.0 * count / summary.tasks if summary.tasks else 0.0
            table.add_row(label, str(count), f"{share:.1f} %")
        console.print(table)
    if result.task_row_count == 0:
        console.print(
            f"No measured rollouts: all {result.masked_rollouts} rollouts are masked (mask_sample), so the "
            "per-task and repeat-level files are empty and the agent file holds coverage only."
        )
    elif summary.mean_reward is None:
        console.print("No reward values to summarise.")
    else:
        line = f"Mean reward: {summary.mean_reward:.4f}"
        if summary.interval is not None:
            low, high = summary.interval
            line += f" (95 % CI {low:.4f} to {high:.4f}, {summary.method} over {summary.tasks} tasks)"
        if summary.bands is None:
            line += "; rewards outside [0, 1], so no pass-rate bands"
        console.print(line)
    # The time this profile took, not the collection's (the report's "collection time").
    console.print(f"Profiled {result.completion.completed_rollout_rows} rollouts in {seconds:.2f} s")


@eval_app.command(
    "profile",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    help="Profile rewards per task: NeMo Gym 0.7.0-identical *_reward_profiling.jsonl, *_agent_metrics.json "
    "and *_repeat_level_metrics.json next to the rollouts.",
)
def profile_command(
    ctx: typer.Context,
    inputs: Annotated[str, typer.Option("--inputs", help=INPUTS_HELP)],
    rollouts: Annotated[str, typer.Option("--rollouts", help=ROLLOUTS_HELP)],
    allow_partial_rollouts: Annotated[
        bool,
        typer.Option(
            "--allow-partial-rollouts",
            help="Profile a partial collection: drop tasks without rollouts instead of failing "
            "(same as ++allow_partial_rollouts=True).",
        ),
    ] = False,
    allow_non_numeric_rewards: Annotated[
        bool,
        typer.Option(
            "--allow-non-numeric-rewards",
            help="Do as NeMo Gym 0.7.0: leave a reward that is not a number (a string, null, a list, an "
            "object) out of the statistics without a word, instead of failing on its line "
            "(same as ++allow_non_numeric_rewards=True).",
        ),
    ] = False,
    report: Annotated[
        bool,
        typer.Option(
            "--report",
            help="Also run 'gym eval analyze': <stem>_analysis.json, health files and <stem>_report.html.",
        ),
    ] = False,
) -> None:
    started = time.perf_counter()
    tokens = split_overrides(ctx.args, _OPTIONS)
    tracker_tokens = [t for t in tokens if t.lstrip("+").startswith(_TRACKER_PREFIXES)]
    overrides = overrides_of([t for t in tokens if t not in tracker_tokens])
    trackers = _trackers(tracker_tokens)
    allow_partial = _flag(
        allow_partial_rollouts, overrides, "allow_partial_rollouts", "--allow-partial-rollouts"
    )
    lenient = _flag(
        allow_non_numeric_rewards, overrides, "allow_non_numeric_rewards", "--allow-non-numeric-rewards"
    )
    if report:  # the analysis takes its columns from the profile's own parse of the rollouts
        from rewardgym.analysis.profile_report import finish_report, profile_and_report

        result, run = profile_and_report(
            Path(inputs), Path(rollouts), allow_partial=allow_partial, allow_non_numeric_rewards=lenient
        )
    else:
        result = profile_files(
            Path(inputs), Path(rollouts), allow_partial=allow_partial, allow_non_numeric_rewards=lenient
        )
    assert result.paths is not None
    for line in summary_lines(result.completion, result.masked_rollouts, result.paths):
        typer.echo(line)
    _print_summary(result, time.perf_counter() - started, Path(rollouts))
    if report:
        del result  # free the profile's columns: the analysis needs only the row parts ``run`` keeps
        console = Console(highlight=False, soft_wrap=True)
        for line in finish_report(run):
            console.print(line, markup=False)
    if trackers:
        from rewardgym.export.trackers import export_run

        settings, targets = trackers
        for target in targets:
            for line in export_run(target, Path(rollouts), settings):
                typer.echo(line)


def _trackers(tokens: list[str]) -> tuple[TrackerSettings, list[Target]] | None:
    """The trackers ``++wandb_*`` / ``++mlflow_*`` switch on, their extras checked before profiling."""
    if not tokens:
        return None
    from rewardgym.export.trackers import require, tracker_settings

    settings = tracker_settings(tokens)
    targets = settings.targets()
    if not targets:
        raise UsageError(
            "tracker settings without a destination: add ++wandb_project=… or ++mlflow_tracking_uri=…"
        )
    for target in targets:
        require(target)
    return settings, targets
