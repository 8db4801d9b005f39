"""``gym eval analyze`` and ``gym eval health-check``, and the hooks ``gym eval profile --report`` and
``gym eval run`` call.

- ``gym eval analyze --inputs M --rollouts R [--pass-threshold 1.0] [--group-sizes 2,4,8,16,32,64]
  [--group-size 8] [--target-share 0.5] [--settle-epsilon 0.05] [--reward-range LOW,HIGH] [--no-report]``
  writes ``<stem>_analysis.json``, ``<stem>_rollout_verdicts.jsonl``, ``<stem>_quality_summary.json``
  and ``<stem>_report.html`` next to R and prints a short summary. Bad input exits 1 with one
  ``Error: …`` line before anything is written; a bad flag exits 2.
- ``gym eval health-check [RUN] [--rollouts PATH] [--rollouts-file PATH] [--workers N] [--ignore-checks
  ID[,ID…]] [--json] [--reward-range LOW,HIGH] [--exit-zero]``: RUN is a folder (its ``rollouts.jsonl``, or
  ``--rollouts-file`` relative to it) or a rollouts file; ``--rollouts PATH`` names the file as ``analyze`` /
  ``profile`` do (instead of RUN). Writes the two health files and prints NeMo Gym's two lines (with its
  `` (ignored: …)`` suffix) plus the verdict. Unreadable lines are findings, not errors. Exit codes: 0
  healthy or warnings only, :data:`UNHEALTHY_EXIT` (4) when the verdict is unhealthy (a check at error
  level), 1 bad input, 2 a bad flag, no rollouts file, an unknown or blank (``a,,b``) check id or
  ``--workers 0``; ``--exit-zero`` exits 0 whatever the verdict (NeMo Gym's behaviour). ``--workers`` is the
  number of processes that read the rollouts file.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.console import Console

from rewardgym.analysis.api import AnalyzeResult, analyze_files
from rewardgym.analysis.document import Settings
from rewardgym.analysis.summary import summary_lines
from rewardgym.cli.main import eval_app
from rewardgym.cli.run_files import OptionalInputsOpt, RolloutsOpt
from rewardgym.cli.run_health import health_workers, ignored_checks, print_health
from rewardgym.errors import UsageError

UNHEALTHY_EXIT = 4
"""``gym eval health-check``'s exit code for an unhealthy run (3 is ``gym eval run``'s failure gate)."""


def _floats(text: str, option: str, count: int | None = None) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UsageError(f"{option} expects comma-separated numbers, got {text!r}") from None
    if not all(math.isfinite(v) for v in values):
        raise UsageError(f"{option} expects finite numbers, got {text!r}")
    if not values or (count is not None and len(values) != count):
        raise UsageError(f"{option} expects {count or 'some'} comma-separated numbers, got {text!r}")
    return values


MAX_GROUP_SIZES = 64
MAX_GROUP_SIZE = 1_000_000


def build_settings(
    pass_threshold: float = 1.0,
    group_sizes: str = "2,4,8,16,32,64",
    group_size: int = 8,
    target_share: float = 0.5,
    settle_epsilon: float = 0.05,
    reward_range: str | None = None,
) -> Settings:
    values = _floats(group_sizes, "--group-sizes")
    if any(not v.is_integer() for v in values):
        raise UsageError(f"--group-sizes {group_sizes!r}: a group size is a whole number")
    sizes = tuple(int(v) for v in values)
    if any(s < 2 for s in sizes) or group_size < 2:
        raise UsageError("group sizes must be at least 2")
    if len(sizes) > MAX_GROUP_SIZES or max(*sizes, group_size) > MAX_GROUP_SIZE:
        raise UsageError(
            f"--group-sizes / --group-size: at most {MAX_GROUP_SIZES} sizes of at most {MAX_GROUP_SIZE:,} "
            "rollouts (a GRPO group larger than that is no training setting; the forecast would only cost)"
        )
    if not 0 < target_share < 1:
        raise UsageError("--target-share must lie strictly between 0 and 1")
    if not 0 <= settle_epsilon < 0.2:
        raise UsageError("--settle-epsilon must lie in [0, 0.2)")
    declared: tuple[float, float] | None = None  # None: the run's declared range (see analyze_files)
    if reward_range is not None:
        low, high = _floats(reward_range, "--reward-range", 2)
        if low > high:
            raise UsageError("--reward-range: the low end exceeds the high end")
        declared = (low, high)
    return Settings(
        pass_threshold=pass_threshold,
        group_sizes=sizes,
        default_group=group_size,
        target_share=target_share,
        settle_epsilon=settle_epsilon,
        reward_range=declared,
    )


def print_result(result: AnalyzeResult) -> None:
    console = Console(highlight=False, soft_wrap=True)
    for line in summary_lines(result):
        console.print(line, markup=False)
    for path in result.written:
        console.print(f"Wrote {path}", markup=False)


RewardRangeOpt = Annotated[
    str | None,
    typer.Option(
        "--reward-range",
        help="Rewards outside 'low,high' are flagged (default: the range the run's environments declared "
        "in <stem>_run.json, else 0,1).",
    ),
]


@eval_app.command(
    "analyze",
    help="Per-task uncertainty, GRPO zero-signal forecast, reward vs length, health verdicts and an HTML "
    "report, written next to the rollouts.",
)
def analyze_command(
    rollouts: RolloutsOpt,
    inputs: OptionalInputsOpt = None,
    pass_threshold: Annotated[
        float, typer.Option("--pass-threshold", help="A rollout passes when reward >= this.")
    ] = 1.0,
    group_sizes: Annotated[str, typer.Option("--group-sizes", help="GRPO group sizes to forecast.")] = (
        "2,4,8,16,32,64"
    ),
    group_size: Annotated[int, typer.Option("--group-size", help="The GRPO group size you train with.")] = 8,
    target_share: Annotated[
        float, typer.Option("--target-share", help="Informative-group share the smallest G must reach.")
    ] = 0.5,
    settle_epsilon: Annotated[
        float, typer.Option("--settle-epsilon", help="Width of the 0 % / 100 % bands for 'settled'.")
    ] = 0.05,
    reward_range: RewardRangeOpt = None,
    no_report: Annotated[bool, typer.Option("--no-report", help="Skip the HTML report.")] = False,
) -> None:
    settings = build_settings(
        pass_threshold, group_sizes, group_size, target_share, settle_epsilon, reward_range
    )
    print_result(analyze_files(inputs, rollouts, settings, report=not no_report))


@eval_app.command(
    "health-check",
    help="Rollout health checks on an existing run: <stem>_rollout_verdicts.jsonl and "
    f"<stem>_quality_summary.json. Exit code 0 when healthy (or warnings only), {UNHEALTHY_EXIT} when "
    "unhealthy, 1 on bad input, 2 on a bad flag.",
)
def health_check_command(
    run: Annotated[
        Path | None, typer.Argument(help="Run folder (with rollouts.jsonl) or a rollouts file.")
    ] = None,
    rollouts: Annotated[
        Path | None,
        typer.Option("--rollouts", help="The rollouts file (as in 'gym eval analyze'; instead of RUN)."),
    ] = None,
    rollouts_file: Annotated[
        Path | None, typer.Option("--rollouts-file", help="Rollouts file (relative to the run folder).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as one line of JSON.")] = False,
    reward_range: RewardRangeOpt = None,
    workers: Annotated[
        int | None, typer.Option("--workers", help="Processes reading the rollouts (default: one per core).")
    ] = None,
    ignore_checks: Annotated[
        str | None,
        typer.Option(
            "--ignore-checks", "--ignore", metavar="ID[,ID…]", help="Health checks not to run (their ids)."
        ),
    ] = None,
    exit_zero: Annotated[
        bool,
        typer.Option(
            "--exit-zero", help=f"Exit 0 when unhealthy too (not {UNHEALTHY_EXIT}), as NeMo Gym does."
        ),
    ] = False,
) -> None:
    ignored = (
        () if ignore_checks is None else ignored_checks(ignore_checks, "--ignore-checks", refuse_blank=True)
    )
    scan_workers = health_workers(workers, "--workers")
    if (run is None) == (rollouts is None):
        raise UsageError("give the run (a folder or rollouts file) or --rollouts FILE, one of them")
    if rollouts is not None:
        if rollouts_file is not None:
            raise UsageError("--rollouts-file names a file inside RUN: give RUN, not --rollouts")
        run = rollouts
    assert run is not None
    if run.is_dir():
        rollouts = run / (rollouts_file or Path("rollouts.jsonl"))
    elif rollouts_file is not None:
        raise UsageError(f"Run directory not found: {run}")
    else:
        rollouts = run
    if not rollouts.is_file():
        raise UsageError(f"Rollout JSONL not found: {rollouts}")
    settings = replace(build_settings(reward_range=reward_range), ignored_checks=ignored)
    result = analyze_files(None, rollouts, settings, strict=False, health_only=True, workers=scan_workers)
    if as_json:
        summary = orjson.loads(result.paths.quality.read_bytes())
        typer.echo(orjson.dumps(summary).decode())
    else:
        print_health(result)
    if result.analysis.document["health"]["verdict"] == "unhealthy" and not exit_zero:
        raise typer.Exit(UNHEALTHY_EXIT)
