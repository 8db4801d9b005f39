"""``gym eval compare RUN RUN [RUN …]``: checkpoint A vs B (vs C …) over their shared tasks.

Each RUN is a rollouts file (its materialized inputs found as ``gym eval analyze`` finds them: the sibling
``<stem>_materialized_inputs.jsonl``, or one ``--inputs`` per rollouts run, in order) or a profile
(``*_reward_profiling.jsonl``). Writes ``--output`` (default ``compare.json`` beside the first run, as
every command writes beside its input) and the page (``compare.html`` beside it, or ``--html``;
``--no-html``), prints a summary. Bad input exits 1 with one ``Error: …`` line
naming the file before anything is written; a bad flag exits 2. See :mod:`rewardgym.compare`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from rewardgym.cli.main import eval_app
from rewardgym.cli.run_files import INPUTS_HELP
from rewardgym.errors import UsageError
from rewardgym.io.outputs import guard_outputs

_HELP = (
    "Compare runs (checkpoint A vs B vs …) task by task: pass rates with intervals, per-task tests with "
    "Benjamini–Hochberg control, the difference of mean pass rate with a paired bootstrap interval, a "
    "verdict and its minimum detectable difference. Writes compare.json and compare.html."
)


_SHORT_BANDS = ("0", "(0,20]", "(20,40]", "(40,60]", "(60,80]", "(80,100)", "100")
"""The profile's band labels, short enough for an 80-column terminal."""


def _pp(value: float) -> str:
    return f"{100 * value:+.1f} pp"


def summary(document: dict[str, Any], console: Console) -> None:
    """The printed summary of a comparison document."""
    from rewardgym.compare.document import power_sentence

    match = document["matching"]
    runs = ", ".join(f"{r['label']} ({r['kind']}, {r['tasks']:,} tasks)" for r in document["runs"])
    console.print(f"Runs: {runs}", markup=False)
    console.print(
        f"Matched {match['matched_tasks']:,} tasks by {match['by']} ({match['unmatched_tasks']:,} unmatched, "
        f"{match['matched_without_rollouts']:,} without counted rollouts: left out)",
        markup=False,
    )
    for run in document["runs"]:
        if run["unmatched_tasks"] or run["ambiguous_tasks"]:
            shown = "; ".join(f"task {e['task']}: {e['shown']!r}" for e in run["unmatched_examples"][:3])
            console.print(
                f"  {run['label']}: {run['unmatched_tasks']:,} unmatched ({shown}), "
                f"{run['ambiguous_tasks']:,} with a key shared by another task",
                markup=False,
            )
    for c in document["comparisons"]:
        o = c["overall"]
        style = {"improved": "bold green", "regressed": "bold red"}.get(o["verdict"], "bold")
        console.print()
        console.print(f"[bold]{c['b']} vs {c['a']}[/bold]: [{style}]{o['verdict']}[/{style}]")
        console.print(
            f"  mean pass rate {100 * o['mean_a']:.1f} % → {100 * o['mean_b']:.1f} %, {_pp(o['diff'])} "
            f"({100 * o['level']:g} % paired bootstrap CI over {c['tasks']:,} tasks: {_pp(o['ci_low'])} to "
            f"{_pp(o['ci_high'])})",
            markup=False,
        )
        console.print(f"  {power_sentence(o)}", markup=False)
        t, obs = c["transitions"], c["observed"]
        console.print(
            f"  per task (Fisher exact, Benjamini–Hochberg FDR {c['per_task_test']['fdr']:g}): "
            f"{t['newly_solved']:,} newly solved, {t['newly_failed']:,} newly failed, "
            f"{t['improved']:,} improved, "
            f"{t['regressed']:,} regressed, {t['unchanged']:,} unchanged; observed {obs['up']:,} up, "
            f"{obs['down']:,} down, {obs['same']:,} same",
            markup=False,
        )
        matrix = c["band_matrix"]
        table = Table(
            title=f"Tasks by pass-rate band (%): {c['a']} (rows) → {c['b']} (columns)", title_justify="left",
            box=box.SIMPLE_HEAD, pad_edge=False,
        )  # fmt: skip
        table.add_column("", no_wrap=True)
        for label in _SHORT_BANDS:
            table.add_column(label, justify="right", no_wrap=True)
        for label, row in zip(_SHORT_BANDS, matrix["counts"], strict=True):
            table.add_row(label, *(f"{v:,}" if v else "·" for v in row))
        console.print(table)


@eval_app.command("compare", help=_HELP)
def compare_command(
    runs: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUN", help="Two or more runs: rollouts files (with materialized inputs) or profiles."
        ),
    ],
    inputs: Annotated[
        list[Path] | None,
        typer.Option("--inputs", help=INPUTS_HELP + " One per rollouts run, in order (default: beside it)."),
    ] = None,
    task_key: Annotated[
        str | None, typer.Option("--task-key", help="Match tasks by this input-row field (dotted path).")
    ] = None,
    ignore_key: Annotated[
        list[str] | None,
        typer.Option("--ignore-key", help="Leave this field (dotted path) out of the content match."),
    ] = None,
    label: Annotated[list[str] | None, typer.Option("--label", help="A name per run, in order.")] = None,
    against: Annotated[
        str,
        typer.Option("--against", help="'baseline': each run vs the first; 'previous': vs the one before."),
    ] = "baseline",
    pass_threshold: Annotated[
        float, typer.Option("--pass-threshold", help="A rollout passes when reward >= this.")
    ] = 1.0,
    level: Annotated[
        float, typer.Option("--level", help="Confidence level of intervals and verdict.")
    ] = 0.95,
    fdr: Annotated[float, typer.Option("--fdr", help="False discovery rate of the per-task tests.")] = 0.05,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates.")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap.")] = 0,
    power: Annotated[
        float, typer.Option("--power", help="Power of the minimum detectable difference.")
    ] = 0.8,
    allow_unmatched: Annotated[
        bool, typer.Option("--allow-unmatched", help="Compare the common tasks when some do not match.")
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="The JSON document.", show_default="compare.json beside the first RUN"
        ),
    ] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="The HTML page (default: --output with .html).")
    ] = None,
    no_html: Annotated[bool, typer.Option("--no-html", help="Write no HTML page.")] = False,
) -> None:
    from rewardgym.compare import Settings, compare_files
    from rewardgym.compare.runs import is_profile

    if len(runs) < 2:
        raise UsageError("gym eval compare needs at least two runs")
    if against not in ("baseline", "previous"):
        raise UsageError(f"--against must be 'baseline' or 'previous', got {against!r}")
    if not 0.5 < level < 1 or not 0 < fdr < 1 or not 0 < power < 1:
        raise UsageError("--level must lie in (0.5, 1), --fdr and --power in (0, 1)")
    if bootstrap < 100:
        raise UsageError("--bootstrap must be at least 100")
    if label and len(label) != len(runs):
        raise UsageError(f"--label given {len(label)} times for {len(runs)} runs")
    if label and len(set(label)) != len(label):
        raise UsageError("--label values must differ")
    rollouts_runs = [path for path in runs if not is_profile(path)]
    if inputs and len(inputs) != len(rollouts_runs):
        raise UsageError(
            f"--inputs given {len(inputs)} times for {len(rollouts_runs)} rollouts run(s) "
            "(profiles need none)"
        )
    given = iter(inputs or [])
    pairs = [(path, None if is_profile(path) or not inputs else next(given)) for path in runs]
    if output is None:
        output = runs[0].parent / "compare.json"
    page = None if no_html else (html or output.with_suffix(".html"))
    read = [(path, "RUN") for path in runs] + [(path, "--inputs") for path in inputs or []]
    guard_outputs([(output, "--output")] + ([(page, "--html")] if page else []), read)
    settings = Settings(
        pass_threshold=pass_threshold, level=level, fdr=fdr, replicates=bootstrap, seed=seed, power=power,
        against=against, task_key=task_key, ignore_keys=tuple(ignore_key or ()),
    )  # fmt: skip
    result = compare_files(
        pairs, settings, labels=label, allow_unmatched=allow_unmatched, output=output, html=page
    )
    console = Console(highlight=False, soft_wrap=True)
    summary(result.document, console)
    for path in result.written:
        console.print(f"Wrote {path}", markup=False)
