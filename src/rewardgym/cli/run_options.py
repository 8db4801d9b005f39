"""``gym eval run``'s settings, resolved and checked once, before any server starts or any file is written.

:func:`resolve_run_settings` turns the parsed flags (:class:`RunFlags`) and the loaded config into one
validated :class:`RunSettings`. Every bad value — a flag or its NeMo Gym config key (``--num-repeats`` /
``++num_repeats``, ``--concurrency`` / ``++num_samples_in_parallel``, ``--limit``, the paths, the adaptive
options, ``++max_attempts``, ``++rollout_timeout_s``, ``++max_failure_rate``, the health-check and tracker
keys…) — is a one-line :class:`~rewardgym.errors.UsageError` / :class:`~rewardgym.errors.DataError` naming the
flag or key. Resolving reads only the inputs it must check (the prompt config, whether ``--input`` exists);
it writes nothing and starts nothing, so a bad value never leaves a server or a file behind.

Where the rows come from is an :class:`InputSource` (``--input``, ``--split``, ``--resume``): a further
source adds a flag to :class:`RunFlags`, a kind here and its preparation in :func:`_input_source` (and in
``rewardgym.cli.run_cmd.prepare_input`` when it writes the rows first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rewardgym.cli import adaptive_opts as ad
from rewardgym.cli.config_cmd import read_files
from rewardgym.cli.run_flags import RunFlags
from rewardgym.cli.run_health import closing_health
from rewardgym.cli.run_settings import (
    agent_map_of,
    config_bool,
    config_concurrency,
    config_number,
    config_path,
    config_text,
    explicit_settings,
    failure_rate_limit,
    fingerprint_settings,
    load_prompt_config,
    parse_shard,
    repeat_spec,
)
from rewardgym.cli.run_trackers import after_run_files, trackers_of
from rewardgym.collect.collate import SPLITS
from rewardgym.collect.curriculum_feed import curriculum_base, curriculum_input
from rewardgym.collect.failures import RetryPolicy
from rewardgym.collect.materialize import MaterializeOptions
from rewardgym.collect.settings import CollectSettings
from rewardgym.config import GymConfig
from rewardgym.config.observability import capture_dir
from rewardgym.errors import DataError, UsageError
from rewardgym.io.inputs import refuse_special_input


class InputSource(BaseModel):
    """Where the rows of the run come from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["input", "split", "resume", "curriculum"]
    """``input``: an existing JSONL file; ``split``: the config's datasets of a split, collated into ``path``
    before the servers start; ``resume``: the materialized inputs of the earlier run (``path`` unused)."""
    path: Path | None = None
    """The input rows the collector reads (None on ``--resume`` without ``--input``)."""
    split: str | None = None
    """The split's name (kind ``split``)."""
    url: str | None = None
    """``--from-curriculum``: the service whose first batch is written to ``path`` before the servers start
    (kind ``curriculum``)."""
    batches: int = Field(default=1, ge=1)
    """``--curriculum-batches``: batches in all, the first included."""
    batch_size: int = Field(default=64, ge=1)
    """``--curriculum-batch-size``: tasks a batch."""
    group: int | None = Field(default=None, ge=1)
    """``--num-repeats`` with ``--from-curriculum``: the group size asked of the service (None: its own)."""


class RunSettings(BaseModel):
    """Everything one ``gym eval run`` does, validated; built by :func:`resolve_run_settings`."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    source: InputSource
    """Where the rows come from."""
    collect: CollectSettings
    """What the collector runs (:mod:`rewardgym.collect.runner`)."""
    sidecars: tuple[tuple[Path, str], ...]
    """Files written after the collection (health files, tracker exports), each with what it is: checked
    with the collector's outputs before anything starts."""
    health: tuple[tuple[str, ...], int | None] | None
    """(ignored checks, reader processes) of the closing health check; None when it is off."""
    trackers: Any = None
    """``++wandb_*`` / ``++mlflow_*``: (settings, targets) of the export after the run, or None."""
    max_failure_rate: float | None = Field(default=None, ge=0, le=1)
    """``++max_failure_rate``: the share of failed rollouts above which the run exits 3."""
    headers: dict[str, str] | None = None
    """``++auth_token`` as the header every request carries (never printed)."""
    head_url: str | None = None
    """``--no-serve``: the head registry the running agents are found through; None: serve the stack."""
    log_dir: Path | None = None
    """Server logs of a serving run (``--log-dir``, ``++nemo_gym_log_dir``, else ``<output folder>/logs``)."""
    startup_timeout_s: float = Field(default=600.0, ge=1)
    """Seconds each started server gets to answer (``--startup-timeout``)."""


def _input_source(flags: RunFlags, cfg: GymConfig, output: Path, resume: bool) -> InputSource:
    input_path = config_path(cfg, "input_jsonl_fpath", flags.input)
    split = flags.split if flags.split is not None else config_text(cfg, "split")
    if flags.from_curriculum is not None:
        conflicts = {"--input": input_path is not None and split is None, "--split": split is not None,
                     "--resume": resume, "--adaptive": flags.adaptive}  # fmt: skip
        base = curriculum_base(flags.from_curriculum, conflicts)
        return InputSource(
            kind="curriculum", path=curriculum_input(output), url=base, batches=flags.curriculum_batches,
            batch_size=flags.curriculum_batch_size, group=flags.num_repeats,
        )  # fmt: skip
    if split is not None and input_path is not None:
        raise UsageError("--split and --input both name the input rows; give one of them")
    if split is not None and not resume:  # NeMo Gym's end-to-end run: the config's datasets of the split
        if split not in SPLITS:
            raise UsageError(f"--split must be one of {', '.join(SPLITS)}, got {split!r}")
        target = output.with_suffix("") / "preprocessed_datasets" / f"{split}.jsonl"
        return InputSource(kind="split", path=target, split=split)
    if input_path is None:
        if not resume:
            raise UsageError("--input is required (or --split, or --resume to continue an earlier run)")
        return InputSource(kind="resume")
    refuse_special_input(input_path, "--input")  # before any server is started or asked
    if not resume and not input_path.is_file():
        if input_path.is_dir():
            raise DataError(f"Input file cannot be read: '{input_path}' (--input): Is a directory")
        raise DataError(f"Input file not found: '{input_path}' (--input)")
    return InputSource(kind="resume" if resume else "input", path=input_path)


def _flag_params(flags: RunFlags) -> dict[str, Any]:
    """``--temperature`` / ``--top-p`` / ``--max-output-tokens`` as given."""
    given = {
        "temperature": flags.temperature,
        "top_p": flags.top_p,
        "max_output_tokens": flags.max_output_tokens,
    }
    return {key: value for key, value in given.items() if value is not None}


def _create_params(flags: RunFlags, cfg: GymConfig) -> dict[str, Any]:
    extra = cfg.get("responses_create_params") or {}
    if not isinstance(extra, dict):
        raise UsageError("responses_create_params overrides must be a mapping")
    return {**extra, **_flag_params(flags)}


def _materialize(
    flags: RunFlags, cfg: GymConfig, repeats: Any, prompt_path: Path | None
) -> MaterializeOptions:
    limit = flags.limit if flags.limit is not None else cfg.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise UsageError(f"limit must be an integer >= 0, got {limit!r}")
    return MaterializeOptions(
        num_repeats=repeats,
        agent_name=flags.agent or cfg.get("agent_name"),
        agent_fill_missing=flags.agent_fill_missing or config_bool(cfg, "agent_fill_missing"),
        limit=limit,
        add_seed=flags.add_seed or config_bool(cfg, "num_repeats_add_seed"),
        create_params_overrides=_create_params(flags, cfg),
        prompt_config=load_prompt_config(prompt_path),
        interleave=flags.interleave_repeats or config_bool(cfg, "interleave_repeats"),
        agent_map=agent_map_of(cfg),
    )


def _collect_settings(flags: RunFlags, cfg: GymConfig, output: Path, source: InputSource) -> CollectSettings:
    resume = source.kind == "resume"
    shard = parse_shard(flags.shard)
    prompt_path = config_path(cfg, "prompt_config", flags.prompt_config)
    num_repeats_given = flags.num_repeats is not None or cfg.get("num_repeats") is not None
    policy, adaptive_record = ad.adaptive_settings(
        resume=resume, num_repeats_given=num_repeats_given, **flags.adaptive_options()
    )
    repeats = policy.initial if policy is not None else repeat_spec(flags.num_repeats, cfg)
    materialize = _materialize(flags, cfg, repeats, prompt_path)
    explicit = explicit_settings(
        resume, cfg=cfg, num_repeats=flags.num_repeats, agent=flags.agent, limit=flags.limit,
        add_seed=flags.add_seed, create_params=_flag_params(flags), prompt_config=prompt_path,
        shard=shard, interleave=flags.interleave_repeats, agent_fill_missing=flags.agent_fill_missing,
    )  # fmt: skip
    fingerprint = fingerprint_settings(cfg, materialize, explicit, shard)
    return CollectSettings(
        output=output,
        input=source.path,
        materialize=materialize,
        concurrency=config_concurrency(cfg, flags.concurrency),
        retry=RetryPolicy(max_attempts=int(config_number(cfg, "max_attempts", 3))),
        rollout_timeout_s=config_number(cfg, "rollout_timeout_s", 900.0),
        fail_fast=config_bool(cfg, "fail_fast"),
        resume=resume,
        force=flags.force,
        retry_failed=flags.retry_failed,
        disable_aggregation=flags.disable_aggregation or config_bool(cfg, "disable_aggregation"),
        shard=shard,
        fingerprint_settings=fingerprint | ({} if adaptive_record is None else {"adaptive": adaptive_record}),
        read_files=read_files(cfg, prompt_path),
        adaptive=policy,
        capture_dir=capture_dir(cfg),
    )


def resolve_run_settings(flags: RunFlags, cfg: GymConfig) -> RunSettings:
    """The run's settings, every value checked (module docstring); raises the first problem as one line."""
    output = config_path(cfg, "output_jsonl_fpath", flags.output) or Path("results/rollouts.jsonl")
    resume = flags.resume or config_bool(cfg, "resume_from_cache")
    source = _input_source(flags, cfg, output, resume)
    collect = _collect_settings(flags, cfg, output, source)
    health = closing_health(cfg, flags.no_health_check, flags.health_check_workers, flags.health_check_ignore)
    trackers = trackers_of(cfg)  # ++wandb_project / ++mlflow_tracking_uri: extras checked up front
    token = cfg.get("auth_token")
    if flags.no_serve:
        host, port = cfg.head_server
        head_url, log_dir = flags.head_url or f"http://{host}:{port}", None
    else:
        logs = flags.log_dir or Path(cfg.get("nemo_gym_log_dir") or output.parent / "logs")
        head_url, log_dir = None, logs.expanduser().resolve()
    return RunSettings(
        source=source,
        collect=collect,
        sidecars=tuple(after_run_files(output, health=health is not None, trackers=trackers is not None)),
        health=health,
        trackers=trackers,
        max_failure_rate=failure_rate_limit(cfg),
        headers={"X-Rewardgym-Token": str(token)} if token else None,
        head_url=head_url,
        log_dir=log_dir,
        startup_timeout_s=flags.startup_timeout,
    )
