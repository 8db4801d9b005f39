"""``gym eval reverify`` and ``gym eval aggregate`` (see :mod:`rewardgym.collect.reverify`).

``gym eval aggregate`` reads every shard before it writes anything: a damaged line or a row without integer
``_ng_task_index``/``_ng_rollout_index`` is an error naming ``file:line``, and so is a key found in two shards
(naming both places: shards must be disjoint, as ``gym eval run --shard I/N`` makes them); a last line torn
by a crash is left out with a note; an ``--output`` that is one of the shards is refused (it would
overwrite its own input). Its aggregate metrics come from the agents: those of a running ``gym env start``
(``--no-serve``, the default, as in NeMo Gym), or with ``--serve`` the servers of the given config, started
for the merge and stopped after it (as ``gym eval run`` without ``--no-serve``).
"""

from __future__ import annotations

import glob
import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from rewardgym.cli import aio
from rewardgym.cli.config_cmd import (
    CONFIG_OPTION_NAMES,
    OVERRIDE_CONTEXT,
    ConfigOpt,
    ModelApiKeyFileOpt,
    ModelApiKeyOpt,
    ModelOpt,
    ModelTypeOpt,
    ModelUrlOpt,
    ResourcesServerOpt,
    SearchDirOpt,
    read_files,
)
from rewardgym.cli.main import eval_app
from rewardgym.cli.overrides import split_overrides
from rewardgym.cli.run_health import closing_health, health_after_run
from rewardgym.cli.run_settings import config_bool as config_flag
from rewardgym.cli.run_settings import config_text
from rewardgym.cli.stack_config import load_stack_config
from rewardgym.collect.aggregate import (
    compute_aggregate_metrics,
    format_key_metrics,
    group_by_agent,
    write_aggregate_metrics,
)
from rewardgym.collect.outputs import RunOutputs, stored_line
from rewardgym.collect.resume import key_of
from rewardgym.collect.reverify import (
    RESOURCES_KIND,
    ReverifySettings,
    agents_of,
    guard_reverify_outputs,
    output_path,
    reverify_config,
    reverify_modes,
    route_urls,
    run_reverify,
)
from rewardgym.collect.stack import ServedStack, discover_agents
from rewardgym.collect.watch import AgentDirectory
from rewardgym.config import GymConfig, load_config
from rewardgym.errors import DataError, UsageError
from rewardgym.io.jsonl import read_jsonl_tolerant
from rewardgym.io.outputs import atomic_writer, guard_outputs, remove_stale
from rewardgym.protocol import keys


def _say(message: str) -> None:
    sys.stdout.write(message + "\n")
    sys.stdout.flush()


@eval_app.command("reverify", context_settings=OVERRIDE_CONTEXT)
def reverify(
    ctx: typer.Context,
    inputs: Annotated[Path, typer.Option("--inputs", help="Materialized inputs of the run.")],
    rollouts: Annotated[Path, typer.Option("--rollouts", help="Rollouts to re-score.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Re-scored rollouts to write.")],
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Rows re-scored at once.")] = 32,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted reverify.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing output.")] = False,
    force: Annotated[
        bool,
        typer.Option("--force", help="Also re-score environments not declared stateless (unsafe_ output)."),
    ] = False,
    disable_aggregation: Annotated[
        bool, typer.Option("--disable-aggregation", help="Skip the aggregate metrics at the end.")
    ] = False,
    log_dir: Annotated[
        Path | None, typer.Option("--log-dir", help="Server logs (default: <output folder>/logs).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Re-score only the first N rollouts.")
    ] = None,
    judge_failed_only: Annotated[
        bool,
        typer.Option(
            "--judge-failed-only",
            help="Recovery: copy the rollouts to the output and re-score only the run's judge failures "
            "(<rollouts stem>_failures.jsonl).",
        ),
    ] = False,
    config: ConfigOpt = None,
    resources_server: ResourcesServerOpt = None,
    model_type: ModelTypeOpt = None,
    search_dir: SearchDirOpt = None,
    model: ModelOpt = None,
    model_url: ModelUrlOpt = None,
    model_api_key: ModelApiKeyOpt = None,
    model_api_key_file: ModelApiKeyFileOpt = None,
) -> None:
    """Re-score stored rollouts with the current verifiers (no inference).

    Each materialized row plus its stored response goes straight to the resources server's /verify.
    """
    known = [*CONFIG_OPTION_NAMES, "--inputs", "--rollouts", "--output", "--concurrency", "--resume",
             "--overwrite", "--force", "--disable-aggregation", "--log-dir", "--limit",
             "--judge-failed-only"]  # fmt: skip
    overrides = split_overrides(ctx.args, known)
    cfg = load_stack_config(
        overrides=overrides, config=config or [], resources=resources_server or [],
        model_types=model_type or [], agents=[], search_dirs=search_dir or [], model=model,
        model_url=model_url, model_api_key=model_api_key, model_api_key_file=model_api_key_file,
    )  # fmt: skip
    served_cfg, routes = reverify_config(cfg)
    settings = ReverifySettings(
        inputs=inputs, rollouts=rollouts, output=output, concurrency=concurrency, resume=resume,
        overwrite=overwrite, force=force, disable_aggregation=disable_aggregation,
        read_files=read_files(cfg), limit=limit,
        judge_failed_only=judge_failed_only or config_flag(cfg, "judge_failed_only"),
    )  # fmt: skip
    # Before any server starts: either name may be written (unsafe_* when an environment is not stateless).
    guard_reverify_outputs(settings, output_path(settings, False), output_path(settings, True))
    logs = (log_dir or output.parent / "logs").expanduser().resolve()
    aio.run(_reverify(settings, served_cfg, routes, logs))


async def _reverify(settings: ReverifySettings, cfg: GymConfig, routes: dict[str, str], logs: Path) -> None:
    needed = agents_of(settings.inputs)
    stack = ServedStack(cfg, log_dir=logs, startup_timeout_s=600.0, notify=_say)
    await stack.start()
    try:
        resource_urls = {inst.name: inst.url for inst in cfg.instances_of(RESOURCES_KIND)}
        modes = await reverify_modes(resource_urls)
        unsafe = sorted(name for name, mode in modes.items() if mode != "stateless")
        if unsafe and not settings.force:
            raise UsageError(
                f"resources server(s) {', '.join(unsafe)} do not declare reverify_mode 'stateless' "
                f"({', '.join(modes[n] for n in unsafe)}): their verify may depend on the episode's session. "
                "Pass --force to re-score anyway (the output is then named unsafe_*)"
            )
        urls = route_urls(routes, resource_urls, needed)
        out_path = output_path(settings, bool(unsafe))
        stats, _ = await run_reverify(settings, urls, out_path)
    finally:
        await stack.stop()
    if stats.failed:
        raise typer.Exit(1)


@eval_app.command("aggregate", context_settings=OVERRIDE_CONTEXT)
def aggregate(
    ctx: typer.Context,
    input_globs: Annotated[
        str | None,
        typer.Option(
            "--input-glob", "--input", "-i", help="Rollout shards: 'glob[,glob]' (or ++input_glob=…)."
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Merged rollouts file to write (or ++output_jsonl_fpath=…)."),
    ] = None,
    no_serve: Annotated[
        bool,
        typer.Option(
            "--no-serve/--serve",
            help="--no-serve: the agents of a running 'gym env start' (--head-url); --serve: start the "
            "servers of the config flags for the merge and stop them after.",
        ),
    ] = True,
    head_url: Annotated[
        str | None,
        typer.Option("--head-url", help="Head registry of the running servers (default: head_server)."),
    ] = None,
    no_health_check: Annotated[
        bool, typer.Option("--no-health-check", help="Skip the health check of the merged rollouts.")
    ] = False,
    health_check_workers: Annotated[
        int | None, typer.Option("--health-check-workers", help="Processes the health check reads with.")
    ] = None,
    health_check_ignore: Annotated[
        str | None,
        typer.Option("--health-check-ignore", metavar="ID[,ID…]", help="Health checks not to run."),
    ] = None,
    log_dir: Annotated[
        Path | None,
        typer.Option("--log-dir", help="Server logs with --serve (default: <output folder>/logs)."),
    ] = None,
    config: ConfigOpt = None,
    resources_server: ResourcesServerOpt = None,
    model_type: ModelTypeOpt = None,
    search_dir: SearchDirOpt = None,
    model: ModelOpt = None,
    model_url: ModelUrlOpt = None,
    model_api_key: ModelApiKeyOpt = None,
    model_api_key_file: ModelApiKeyFileOpt = None,
) -> None:
    """Merge rollout shards (sorted by key) and recompute aggregate metrics through the agents; then the
    health check of the merged rollouts, as after 'gym eval run'."""
    known = [*CONFIG_OPTION_NAMES, "--input-glob", "--input", "--output", "--no-serve", "--serve",
             "--head-url", "--log-dir", "--no-health-check", "--health-check-workers",
             "--health-check-ignore"]  # fmt: skip
    overrides = split_overrides(ctx.args, known)
    if no_serve:
        cfg = load_config(config or [], overrides, require_complete=False, check_keys=True)
    else:
        if head_url is not None:
            raise UsageError("--head-url names running servers: use it with --no-serve, not --serve")
        cfg = load_stack_config(
            overrides=overrides, config=config or [], resources=resources_server or [],
            model_types=model_type or [], agents=[], search_dirs=search_dir or [], model=model,
            model_url=model_url, model_api_key=model_api_key, model_api_key_file=model_api_key_file,
        )  # fmt: skip
    input_globs = input_globs or config_text(cfg, "input_glob")
    output = output or (Path(text) if (text := config_text(cfg, "output_jsonl_fpath")) else None)
    if input_globs is None or output is None:
        raise UsageError("--input-glob and --output are required (or ++input_glob / ++output_jsonl_fpath)")
    health = closing_health(cfg, no_health_check, health_check_workers, health_check_ignore)
    paths = sorted({Path(p) for pattern in input_globs.split(",") for p in glob.glob(pattern.strip())})
    if not paths:
        raise UsageError(f"no rollout file matches --input {input_globs!r}")
    guard_outputs(
        [(output, "--output"), (RunOutputs(output).aggregate_metrics, "output (written next to --output)")],
        [(path, "--input shard") for path in paths],
    )
    if not no_serve:
        logs = (log_dir or output.parent / "logs").expanduser().resolve()
        aio.run(_aggregate_served(paths, output, cfg, logs))
        if health is not None:
            health_after_run(output, ignored=health[0], workers=health[1])
        return
    host, port = cfg.head_server
    head = head_url or f"http://{host}:{port}"
    token = cfg.get("auth_token")
    aio.run(_aggregate(paths, output, head, {"X-Rewardgym-Token": str(token)} if token else {}))
    if health is not None:
        health_after_run(output, ignored=health[0], workers=health[1])


def _same_run(paths: list[Path]) -> None:
    """Shards of one run were collected from one ``--input``: their fingerprints (``<stem>_run.json``,
    when beside them) must name the same input file hash."""
    hashes: dict[str, Path] = {}
    for path in paths:
        try:
            recorded = orjson.loads(RunOutputs(path).fingerprint.read_bytes()).get("input_sha256")
        except (OSError, orjson.JSONDecodeError, AttributeError):
            continue
        if isinstance(recorded, str):
            hashes.setdefault(recorded, path)
    if len(hashes) > 1:
        first, second = list(hashes.values())[:2]
        raise DataError(
            f"shards {first} and {second} were collected from different --input files (their *_run.json "
            "record different input hashes): they are not shards of one run"
        )


def _task_identity(row: dict[str, Any]) -> bytes:
    """What every rollout of one task shares: its prompt and its agent."""
    params = row.get("responses_create_params")
    prompt = params.get("input") if isinstance(params, dict) else None
    agent = row.get("agent_ref", {}).get("name") if isinstance(row.get("agent_ref"), dict) else None
    return orjson.dumps([prompt, agent], option=orjson.OPT_SORT_KEYS)


def _read_shards(paths: list[Path]) -> list[dict[str, Any]]:
    """Every whole row of every shard, each with an integer key (a torn last line is left out, noted);
    refused when the shards are not of one run (another input, or one task with two prompts or agents)."""
    _same_run(paths)
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[int, int], str] = {}
    tasks: dict[int, tuple[bytes, str]] = {}
    for path in paths:
        found, torn = read_jsonl_tolerant(path, what="Rollouts file")
        if torn is not None:
            _say(f"Note: {path}:{torn.line_number} was cut short by a crash; that rollout is left out")
        for number, row in enumerate(found, start=1):
            where = f"{path}:{number}"
            key = key_of(row, where)
            if key in seen:
                raise DataError(
                    f"rollout (task {key[0]}, rollout {key[1]}) is in two shards: {seen[key]} and {where}; "
                    "shards must be disjoint (make them with 'gym eval run --shard I/N')"
                )
            seen[key] = where
            identity = _task_identity(row)
            known = tasks.setdefault(key[0], (identity, where))
            if known[0] != identity:
                raise DataError(
                    f"task {key[0]} has another prompt or agent in {where} than in {known[1]}: these shards "
                    "are not of one run (merge only the shards of one 'gym eval run --shard I/N')"
                )
        rows.extend(found)
    return rows


async def _aggregate_served(paths: list[Path], output: Path, cfg: GymConfig, logs: Path) -> None:
    _read_shards(paths)  # bad shards fail before any server starts
    stack = ServedStack(cfg, log_dir=logs, startup_timeout_s=600.0, notify=_say)
    await stack.start()
    try:
        await _aggregate(paths, output, None, {}, stack.agent_urls)
    finally:
        await stack.stop()


async def _aggregate(
    paths: list[Path],
    output: Path,
    head: str | None,
    headers: dict[str, str],
    agents: AgentDirectory | None = None,
) -> None:
    rows = _read_shards(paths)
    if agents is None:
        assert head is not None
        agents = await discover_agents(head, headers)
    groups = group_by_agent(paths)
    merged = sorted(rows, key=lambda r: (r[keys.TASK_INDEX], r[keys.ROLLOUT_INDEX]))
    output.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(output.parent)  # temp files of killed runs (their owner is gone)
    with atomic_writer(output) as handle:
        for row in merged:
            handle.write(stored_line(row) + b"\n")
    entries = await compute_aggregate_metrics(groups, agents, headers=headers)
    target = RunOutputs(output).aggregate_metrics
    write_aggregate_metrics(target, entries)
    _say(format_key_metrics(entries))
    _say(f"\nMerged {len(merged)} rollouts from {len(paths)} file(s) into {output}")
    _say(f"Aggregate metrics: {target}")
