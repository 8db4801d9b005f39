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

import typer

from rewardgym.cli import adaptive_opts as ad
from rewardgym.cli import aio
from rewardgym.cli import run_flags as f
from rewardgym.cli.config_cmd import (
    OVERRIDE_CONTEXT,
    ConfigOpt,
    ModelApiKeyFileOpt,
    ModelApiKeyOpt,
    ModelOpt,
    ModelTypeOpt,
    ModelUrlOpt,
    ResourcesServerOpt,
    SearchDirOpt,
)
from rewardgym.cli.main import eval_app
from rewardgym.cli.overrides import split_overrides
from rewardgym.cli.run_health import health_after_run
from rewardgym.cli.run_options import RunSettings, resolve_run_settings
from rewardgym.cli.run_settings import exit_code_of
from rewardgym.cli.run_trackers import export_after_run
from rewardgym.cli.stack_config import load_stack_config
from rewardgym.collect.collate import collate_split
from rewardgym.collect.curriculum_feed import start_from_curriculum
from rewardgym.collect.dispatch import Dispatcher
from rewardgym.collect.prepare import guard_run_outputs
from rewardgym.collect.runner import format_summary, run_collection
from rewardgym.collect.stack import ServedStack, discover_agents
from rewardgym.config import GymConfig, load_config


def _say(message: str) -> None:
    sys.stdout.write(message + "\n")
    sys.stdout.flush()


@eval_app.command("run", context_settings=OVERRIDE_CONTEXT)
def run(
    ctx: typer.Context,
    input: f.InputOpt = None,
    output: f.OutputOpt = None,
    agent: f.RunAgentOpt = None,
    agent_fill_missing: f.FillMissingOpt = False,
    limit: f.LimitOpt = None,
    num_repeats: f.NumRepeatsOpt = None,
    concurrency: f.ConcurrencyOpt = None,
    resume: f.ResumeOpt = False,
    force: f.ForceOpt = False,
    retry_failed: f.RetryFailedOpt = False,
    prompt_config: f.PromptConfigOpt = None,
    temperature: f.TemperatureOpt = None,
    top_p: f.TopPOpt = None,
    max_output_tokens: f.MaxOutputTokensOpt = None,
    disable_aggregation: f.DisableAggregationOpt = False,
    split: f.SplitOpt = None,
    shard: f.ShardOpt = None,
    add_seed: f.AddSeedOpt = False,
    interleave_repeats: f.InterleaveOpt = False,
    no_serve: f.NoServeOpt = False,
    head_url: f.HeadUrlOpt = None,
    log_dir: f.LogDirOpt = None,
    startup_timeout: f.StartupTimeoutOpt = 600.0,
    config: ConfigOpt = None,
    resources_server: ResourcesServerOpt = None,
    model_type: ModelTypeOpt = None,
    search_dir: SearchDirOpt = None,
    model: ModelOpt = None,
    model_url: ModelUrlOpt = None,
    model_api_key: ModelApiKeyOpt = None,
    model_api_key_file: ModelApiKeyFileOpt = None,
    no_health_check: f.NoHealthCheckOpt = False,
    health_check_workers: f.HealthWorkersOpt = None,
    health_check_ignore: f.HealthIgnoreOpt = None,
    adaptive: ad.AdaptiveOpt = False,
    adaptive_initial: ad.InitialOpt = None,
    adaptive_max: ad.MaxOpt = None,
    adaptive_budget: ad.BudgetOpt = None,
    adaptive_step: ad.StepOpt = None,
    adaptive_confidence: ad.ConfidenceOpt = None,
    adaptive_boundary: ad.BoundaryOpt = None,
    adaptive_pass_threshold: ad.PassThresholdOpt = None,
    from_curriculum: f.FromCurriculumOpt = None,
    curriculum_batches: f.CurriculumBatchesOpt = 1,
    curriculum_batch_size: f.CurriculumBatchSizeOpt = 64,
) -> None:
    """Collect rollouts: materialize the input rows, run them through the agents, record each result.

    Overrides: +key=value / ++key=value (e.g. ++rollout_timeout_s=600 ++max_attempts=5 ++fail_fast=true
    ++max_failure_rate=0.1). Exit codes: 0 done, 1 error or stopped, 2 usage, 3 failure rate exceeded,
    130 interrupted.
    """
    flags = f.RunFlags(**{name: value for name, value in locals().items() if name != "ctx"})
    cfg = _load_config(split_overrides(ctx.args, f.FLAGS), flags)
    settings = resolve_run_settings(flags, cfg)  # every value checked: nothing started or written yet
    settings = prepare_input(settings, cfg)
    _after_run(settings, cfg, aio.run(_collect(settings, cfg)))


def _load_config(overrides: list[str], flags: f.RunFlags) -> GymConfig:
    """The config files + overrides; a serving run's under the model-flag rule (``stack_config``)."""
    if flags.no_serve:
        return load_config(
            flags.config or [], overrides, search_dirs=flags.search_dir or [], require_complete=False,
            check_keys=True,
        )  # fmt: skip
    return load_stack_config(
        overrides=overrides, config=flags.config or [], resources=flags.resources_server or [],
        model_types=flags.model_type or [], agents=[], search_dirs=flags.search_dir or [], model=flags.model,
        model_url=flags.model_url, model_api_key=flags.model_api_key,
        model_api_key_file=flags.model_api_key_file,
    )  # fmt: skip


def prepare_input(settings: RunSettings, cfg: GymConfig) -> RunSettings:
    """Check every output (the collector's and the sidecars written after it), then write the input rows a
    source makes (``--split``: the config's datasets collated; ``--from-curriculum``: the service's first
    batch) — still before any server starts. Returns the settings the source completes."""
    source = settings.source
    # The written rows are an output first (their writer checks them against the inputs read so far).
    made = source.kind in ("split", "curriculum")
    collect = dataclasses.replace(settings.collect, input=None) if made else settings.collect
    guard_run_outputs(collect, settings.sidecars)
    if source.kind == "split":
        assert source.path is not None and source.split is not None
        collated, rows = collate_split(cfg, source.split, source.path.parent)
        _say(f"Collated {rows} rows of split {source.split!r} into {collated}")
    if source.kind == "curriculum":
        return _first_batch(settings)
    return settings


def _first_batch(settings: RunSettings) -> RunSettings:
    """The first batch of ``--from-curriculum`` as the input; the group size the service serves it for is
    the number of repeats (``--num-repeats`` asks the service for that size)."""
    source, collect = settings.source, settings.collect
    assert source.url is not None and source.path is not None
    start = start_from_curriculum(
        source.url, path=source.path, batches=source.batches, batch_size=source.batch_size,
        group=source.group, headers=settings.headers,
    )  # fmt: skip
    materialize = dataclasses.replace(collect.materialize, num_repeats=start.group)
    fingerprint = dict(collect.fingerprint_settings)
    fingerprint["materialize"] = {**fingerprint.get("materialize", {}), "num_repeats": start.group}
    collect = dataclasses.replace(
        collect, materialize=materialize, fingerprint_settings=fingerprint, curriculum=start.feed
    )
    return settings.model_copy(update={"collect": collect})


async def _collect(settings: RunSettings, cfg: GymConfig) -> int:
    if settings.head_url is not None:
        return await _collect_no_serve(settings)
    return await _collect_served(settings, cfg)


def _after_run(settings: RunSettings, cfg: GymConfig, code: int) -> None:
    """The run's exit code when not 0, else the closing health check and the tracker export."""
    if code:
        raise typer.Exit(code)
    output = settings.collect.output
    if settings.health is not None:
        health_after_run(output, ignored=settings.health[0], workers=settings.health[1])
    if settings.trackers is not None:
        export_after_run(output, settings.trackers, cfg)


async def _collect_no_serve(settings: RunSettings) -> int:
    assert settings.head_url is not None
    agents = await discover_agents(settings.head_url, settings.headers)
    # The local config does not say which model the running servers serve: the head registry does.
    fingerprint = {**settings.collect.fingerprint_settings, "models": agents.models or {}}
    collect = dataclasses.replace(settings.collect, fingerprint_settings=fingerprint)
    summary = await run_collection(collect, agents, headers=settings.headers)
    _say(format_summary(summary))
    return exit_code_of(summary, settings.max_failure_rate)


async def _collect_served(settings: RunSettings, cfg: GymConfig) -> int:
    assert settings.log_dir is not None
    stack = ServedStack(
        cfg, log_dir=settings.log_dir, startup_timeout_s=settings.startup_timeout_s, notify=_say
    )
    await stack.start()
    try:
        dispatchers: list[Dispatcher] = []

        def on_death(failure: Exception) -> None:
            for dispatcher in dispatchers:
                dispatcher.stop(f"server {failure}")

        stack.watch(on_death)
        summary = await run_collection(
            settings.collect, stack.agent_urls, headers=settings.headers, on_dispatcher=dispatchers.append
        )
    finally:
        await stack.stop()
    _say(format_summary(summary))
    if stack.failure is not None:
        _say(f"\n{stack.failure}")
        return 1
    return exit_code_of(summary, settings.max_failure_rate)
