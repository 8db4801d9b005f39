"""``gym eval run``: collect rollouts (see :mod:`rewardgym.collect.runner` for what resume guarantees).

With ``--no-serve`` the agents of a running ``gym env start`` are found through its head registry; without
it, the servers of the given config are started for this run and stopped afterwards. Settings without a
flag are read from the config (``++rollout_timeout_s=…``, ``++max_attempts=…``, ``++fail_fast=true``,
``++num_repeats={a: 8, _default: 1}``, ``++num_repeats_add_seed=true``, ``++interleave_repeats=true``,
``++agent_fill_missing=true``); ``++wandb_project=…`` / ``++mlflow_tracking_uri=…`` profile the finished
run and send it to W&B / MLflow (:mod:`rewardgym.cli.run_trackers`).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from rewardgym.cli import adaptive_opts as ad
from rewardgym.cli import aio
from rewardgym.cli.analyze_cmd import closing_health, health_after_run
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
from rewardgym.cli.run_settings import (
    agent_map_of,
    config_bool,
    config_concurrency,
    config_number,
    config_path,
    config_text,
    exit_code_of,
    explicit_settings,
    failure_rate_limit,
    fingerprint_settings,
    load_prompt_config,
    parse_shard,
    repeat_spec,
)
from rewardgym.cli.run_trackers import after_run_files, export_after_run, trackers_of
from rewardgym.cli.stack_config import load_stack_config
from rewardgym.collect.collate import collate_split
from rewardgym.collect.dispatch import Dispatcher
from rewardgym.collect.failures import RetryPolicy
from rewardgym.collect.materialize import MaterializeOptions
from rewardgym.collect.prepare import guard_run_outputs
from rewardgym.collect.runner import format_summary, run_collection
from rewardgym.collect.settings import CollectSettings
from rewardgym.collect.stack import ServedStack, discover_agents
from rewardgym.config import GymConfig, load_config
from rewardgym.config.observability import capture_dir
from rewardgym.errors import DataError, UsageError
from rewardgym.io.inputs import refuse_special_input

_FLAGS = [
    *CONFIG_OPTION_NAMES,
    "--input", "--output", "--agent", "--limit", "--num-repeats", "--concurrency", "--resume", "--force",
    "--retry-failed", "--prompt-config", "--temperature", "--top-p", "--max-output-tokens",
    "--disable-aggregation", "--num-repeats-add-seed", "--no-serve", "--head-url", "--log-dir",
    "--startup-timeout", "--split", "--shard", "--no-health-check", "--health-check-workers",
    "--health-check-ignore", "--interleave-repeats", "--agent-fill-missing",
    *ad.FLAGS,
]  # fmt: skip


def _say(message: str) -> None:
    sys.stdout.write(message + "\n")
    sys.stdout.flush()


@eval_app.command("run", context_settings=OVERRIDE_CONTEXT)
def run(
    ctx: typer.Context,
    input_path: Annotated[
        Path | None,
        typer.Option(
            "--input",
            "-i",
            help="Input rows (JSONL). Required, except with --split or --resume.",
            show_default=False,
        ),
    ] = None,
    output_flag: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Rollouts file to write (JSONL; default results/rollouts.jsonl)."
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent", "-a", help="Agent of every row (replacing a row's own agent_ref, as NeMo Gym 0.7.0)."
        ),
    ] = None,
    agent_fill_missing: Annotated[
        bool,
        typer.Option("--agent-fill-missing", help="--agent only sets rows without agent_ref; keep the rest."),
    ] = False,
    limit: Annotated[
        int | None, typer.Option("--limit", help="Use only the first N input lines.", min=0)
    ] = None,
    num_repeats: Annotated[
        int | None,
        typer.Option(
            "--num-repeats", help="Rollouts per task.", show_default="1, or ++num_repeats of the config"
        ),
    ] = None,
    concurrency_flag: Annotated[
        int | None,
        typer.Option(
            "--concurrency", help="Rollouts in flight.", min=1, show_default="32, or num_samples_in_parallel"
        ),
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted run.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Resume although the run changed.")] = False,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="On resume, run failed rollouts again.")
    ] = False,
    prompt_config: Annotated[
        Path | None,
        typer.Option(
            "--prompt-config",
            help="YAML file with a 'user' (and optional 'system') prompt template; {field} is replaced by "
            "the row's field (Python str.format syntax).",
        ),
    ] = None,
    temperature: Annotated[
        float | None, typer.Option("--temperature", help="Sampling temperature sent with every row.")
    ] = None,
    top_p: Annotated[
        float | None, typer.Option("--top-p", help="Nucleus sampling top_p for every row.")
    ] = None,
    max_output_tokens: Annotated[
        int | None, typer.Option("--max-output-tokens", min=1, help="Output token limit for every row.")
    ] = None,
    disable_aggregation: Annotated[
        bool, typer.Option("--disable-aggregation", help="Skip the aggregate metrics at the end.")
    ] = False,
    split: Annotated[
        str | None,
        typer.Option(
            "--split",
            help="Collect the config's datasets of this split (train, validation, benchmark, example) "
            "instead of --input: collated into <output without suffix>/preprocessed_datasets/<split>.jsonl.",
        ),
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="I/N",
            help="Run only shard I of N (tasks whose index is I modulo N; 0 <= I < N); merge the shards "
            "with 'gym eval aggregate'.",
        ),
    ] = None,
    add_seed: Annotated[
        bool, typer.Option("--num-repeats-add-seed", help="Send the rollout index as the sampling seed.")
    ] = False,
    interleave_repeats: Annotated[
        bool,
        typer.Option(
            "--interleave-repeats",
            help="Order the rollouts round by round (abcabc: every task's rollout 0, then 1…) instead of "
            "each task's repeats back to back (aabbcc).",
        ),
    ] = False,
    no_serve: Annotated[
        bool, typer.Option("--no-serve", help="Use servers of a running 'gym env start'.")
    ] = False,
    head_url: Annotated[
        str | None, typer.Option("--head-url", help="Head registry URL (--no-serve).")
    ] = None,
    log_dir: Annotated[
        Path | None,
        typer.Option("--log-dir", help="Server logs (without --no-serve; default: <output folder>/logs)."),
    ] = None,
    startup_timeout: Annotated[
        float,
        typer.Option(
            "--startup-timeout", min=1, help="Seconds each server gets to answer (without --no-serve)."
        ),
    ] = 600.0,
    config: ConfigOpt = None,
    resources_server: ResourcesServerOpt = None,
    model_type: ModelTypeOpt = None,
    search_dir: SearchDirOpt = None,
    model: ModelOpt = None,
    model_url: ModelUrlOpt = None,
    model_api_key: ModelApiKeyOpt = None,
    model_api_key_file: ModelApiKeyFileOpt = None,
    no_health_check: Annotated[
        bool, typer.Option("--no-health-check", help="Skip the health check.")
    ] = False,
    health_check_workers: Annotated[
        int | None,
        typer.Option("--health-check-workers", help="Processes the closing health check reads with."),
    ] = None,
    health_check_ignore: Annotated[
        str | None,
        typer.Option("--health-check-ignore", metavar="ID[,ID…]", help="Health checks not to run."),
    ] = None,
    adaptive: ad.AdaptiveOpt = False,
    adaptive_initial: ad.InitialOpt = None,
    adaptive_max: ad.MaxOpt = None,
    adaptive_budget: ad.BudgetOpt = None,
    adaptive_step: ad.StepOpt = None,
    adaptive_confidence: ad.ConfidenceOpt = None,
    adaptive_boundary: ad.BoundaryOpt = None,
    adaptive_pass_threshold: ad.PassThresholdOpt = None,
) -> None:
    """Collect rollouts: materialize the input rows, run them through the agents, record each result.

    Overrides: +key=value / ++key=value (e.g. ++rollout_timeout_s=600 ++max_attempts=5 ++fail_fast=true
    ++max_failure_rate=0.1). Exit codes: 0 done, 1 error or stopped, 2 usage, 3 failure rate exceeded,
    130 interrupted.
    """
    overrides = split_overrides(ctx.args, _FLAGS)
    shard_spec = parse_shard(shard)
    if no_serve:
        cfg = load_config(
            config or [], overrides, search_dirs=search_dir or [], require_complete=False, check_keys=True
        )
    else:
        cfg = load_stack_config(
            overrides=overrides, config=config or [], resources=resources_server or [],
            model_types=model_type or [], agents=[], search_dirs=search_dir or [], model=model,
            model_url=model_url, model_api_key=model_api_key, model_api_key_file=model_api_key_file,
        )  # fmt: skip
    # NeMo Gym's config keys for what the flags say (+input_jsonl_fpath=… for --input); a flag wins.
    input_path = config_path(cfg, "input_jsonl_fpath", input_path)
    output = config_path(cfg, "output_jsonl_fpath", output_flag) or Path("results/rollouts.jsonl")
    resume = resume or config_bool(cfg, "resume_from_cache")
    concurrency = config_concurrency(cfg, concurrency_flag)
    prompt_config = config_path(cfg, "prompt_config", prompt_config)
    split = split if split is not None else config_text(cfg, "split")
    if split is not None and input_path is not None:
        raise UsageError("--split and --input both name the input rows; give one of them")
    if split is not None and not resume:  # NeMo Gym's end-to-end run: the config's datasets of the split
        collated, rows = collate_split(cfg, split, output.with_suffix("") / "preprocessed_datasets")
        _say(f"Collated {rows} rows of split {split!r} into {collated}")
        input_path = collated
    if input_path is None and not resume:
        raise UsageError("--input is required (or --split, or --resume to continue an earlier run)")
    if input_path is not None:
        refuse_special_input(input_path, "--input")  # before any server is started or asked
    if input_path is not None and not resume and not input_path.is_file():
        # Checked before any server starts (a serving run would otherwise boot the model first).
        if input_path.is_dir():
            raise DataError(f"Input file cannot be read: '{input_path}' (--input): Is a directory")
        raise DataError(f"Input file not found: '{input_path}' (--input)")
    health = closing_health(cfg, no_health_check, health_check_workers, health_check_ignore)
    create_params: dict[str, Any] = {}
    for key, value in (
        ("temperature", temperature),
        ("top_p", top_p),
        ("max_output_tokens", max_output_tokens),
    ):
        if value is not None:
            create_params[key] = value
    extra_params = cfg.get("responses_create_params") or {}
    if not isinstance(extra_params, dict):
        raise UsageError("responses_create_params overrides must be a mapping")
    policy, adaptive_record = ad.adaptive_settings(
        adaptive=adaptive, resume=resume,
        num_repeats_given=num_repeats is not None or cfg.get("num_repeats") is not None,
        initial=adaptive_initial, max_per_task=adaptive_max, budget=adaptive_budget, step=adaptive_step,
        confidence=adaptive_confidence, boundary=adaptive_boundary, pass_threshold=adaptive_pass_threshold,
    )  # fmt: skip
    materialize = MaterializeOptions(
        num_repeats=policy.initial if policy is not None else repeat_spec(num_repeats, cfg),
        agent_name=agent or cfg.get("agent_name"),
        agent_fill_missing=agent_fill_missing or config_bool(cfg, "agent_fill_missing"),
        limit=limit if limit is not None else cfg.get("limit"),
        add_seed=add_seed or config_bool(cfg, "num_repeats_add_seed"),
        create_params_overrides={**extra_params, **create_params},
        prompt_config=load_prompt_config(prompt_config),
        interleave=interleave_repeats or config_bool(cfg, "interleave_repeats"),
        agent_map=agent_map_of(cfg),
    )
    explicit = explicit_settings(
        resume,
        cfg=cfg,
        num_repeats=num_repeats,
        agent=agent,
        limit=limit,
        add_seed=add_seed,
        create_params=create_params,
        prompt_config=prompt_config,
        shard=shard_spec,
        interleave=interleave_repeats,
        agent_fill_missing=agent_fill_missing,
    )
    settings = CollectSettings(
        output=output,
        input=input_path,
        materialize=materialize,
        concurrency=concurrency,
        retry=RetryPolicy(max_attempts=int(config_number(cfg, "max_attempts", 3))),
        rollout_timeout_s=config_number(cfg, "rollout_timeout_s", 900.0),
        fail_fast=config_bool(cfg, "fail_fast"),
        resume=resume,
        force=force,
        retry_failed=retry_failed,
        disable_aggregation=disable_aggregation or config_bool(cfg, "disable_aggregation"),
        shard=shard_spec,
        fingerprint_settings=fingerprint_settings(cfg, materialize, explicit, shard_spec)
        | ({} if adaptive_record is None else {"adaptive": adaptive_record}),
        read_files=read_files(cfg, prompt_config),
        adaptive=policy,
        capture_dir=capture_dir(cfg),
    )
    trackers = trackers_of(cfg)  # ++wandb_project / ++mlflow_tracking_uri: extras checked up front
    # before any server starts or any file (a log folder) is created: every file the run may write
    guard_run_outputs(
        settings, after_run_files(output, health=health is not None, trackers=trackers is not None)
    )
    max_failure_rate = failure_rate_limit(cfg)
    token = cfg.get("auth_token")
    headers = {"X-Rewardgym-Token": str(token)} if token else None
    if no_serve:
        host, port = cfg.head_server
        head = head_url or f"http://{host}:{port}"
        code = aio.run(_collect_no_serve(settings, head, headers, max_failure_rate))
    else:
        logs = log_dir or Path(cfg.get("nemo_gym_log_dir") or output.parent / "logs")
        code = aio.run(
            _collect_served(
                settings, cfg, logs.expanduser().resolve(), startup_timeout, headers, max_failure_rate
            )
        )
    if code:
        raise typer.Exit(code)
    if health is not None:
        health_after_run(output, ignored=health[0], workers=health[1])
    if trackers is not None:
        export_after_run(output, trackers, cfg)


async def _collect_no_serve(
    settings: CollectSettings, head: str, headers: dict[str, str] | None, max_failure_rate: float | None
) -> int:
    agents = await discover_agents(head, headers)
    # The local config does not say which model the running servers serve: the head registry does.
    fingerprint = {**settings.fingerprint_settings, "models": agents.models or {}}
    settings = dataclasses.replace(settings, fingerprint_settings=fingerprint)
    summary = await run_collection(settings, agents, headers=headers)
    _say(format_summary(summary))
    return exit_code_of(summary, max_failure_rate)


async def _collect_served(
    settings: CollectSettings,
    cfg: GymConfig,
    log_dir: Path,
    startup_timeout: float,
    headers: dict[str, str] | None,
    max_failure_rate: float | None,
) -> int:
    stack = ServedStack(cfg, log_dir=log_dir, startup_timeout_s=startup_timeout, notify=_say)
    await stack.start()
    try:
        dispatchers: list[Dispatcher] = []

        def on_death(failure: Exception) -> None:
            for dispatcher in dispatchers:
                dispatcher.stop(f"server {failure}")

        stack.watch(on_death)
        summary = await run_collection(
            settings, stack.agent_urls, headers=headers, on_dispatcher=dispatchers.append
        )
    finally:
        await stack.stop()
    _say(format_summary(summary))
    if stack.failure is not None:
        _say(f"\n{stack.failure}")
        return 1
    return exit_code_of(summary, max_failure_rate)
