"""``gym eval reverify``: re-score stored rollouts with the current verifiers, without inference.

Each rollout's materialized row plus its stored ``response`` is POSTed straight to the resources server's
``/verify`` (no ``/seed_session``, no agent), so only environments that declare themselves *stateless*
(``GET /reverify_mode``) give trustworthy rewards; ``force`` re-scores the others anyway and the output name
is prefixed ``unsafe_``. Failures and resume behave as in collection: a failure is recorded in
``<stem>_failures.jsonl`` (never a reward), ``resume`` skips keys already in the output.

No output may be one of the inputs: re-scoring ``--rollouts R`` into ``-o R`` is refused before anything
is touched (rollouts whose re-verification failed would otherwise be lost from R); write elsewhere.
The rollouts may also be ATIF trajectories (``gym eval export --format atif``): each response is rebuilt
from the trajectory's steps. ``limit`` re-scores only the first N rollouts of the rollouts file (in its
order). ``judge_failed_only`` seeds the output with the rollouts (each key once) and re-scores only the
judge failures of the run's failures sidecar (each key once; a key already in the output is skipped), the
first ``limit`` of them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

import aiohttp
import orjson

from rewardgym.collect.agent_client import AgentClient
from rewardgym.collect.aggregate import (
    compute_aggregate_metrics,
    format_key_metrics,
    group_by_agent,
    write_aggregate_metrics,
)
from rewardgym.collect.dispatch import Dispatcher, DispatchStats, Pending
from rewardgym.collect.failures import AttemptFailure, FailureClass, RetryPolicy
from rewardgym.collect.outputs import RunOutputs, stored_line
from rewardgym.collect.resume import PriorRun, key_of, load_prior_run
from rewardgym.collect.runlock import run_lock
from rewardgym.collect.runner import failure_row
from rewardgym.config import GymConfig
from rewardgym.errors import DataError, UsageError
from rewardgym.io.jsonl import JsonlAppender, iter_jsonl
from rewardgym.io.outputs import guard_outputs
from rewardgym.protocol import atif, keys

RESOURCES_KIND: Final = "resources_servers"
AGENTS_KIND: Final = "responses_api_agents"


@dataclass
class ReverifySettings:
    inputs: Path
    rollouts: Path
    output: Path
    concurrency: int = 32
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout_s: float = 600.0
    resume: bool = False
    overwrite: bool = False
    force: bool = False
    disable_aggregation: bool = False
    judge_failed_only: bool = False
    """Recovery (NeMo Gym's ``--judge-failed-only``): the output is seeded with the rollouts as they are, and
    only the run's judge failures (``<rollouts stem>_failures.jsonl`` rows of class ``judge_failed``, which
    keep their response) are re-scored and appended."""
    limit: int | None = None
    """Re-verify only the first N rollouts of ``rollouts`` (NeMo Gym's ``--limit``; rows already done by a
    resumed run count against it)."""
    read_files: tuple[tuple[Path, str], ...] = ()
    """Other files the command read (config files): no output may be one of them."""


def output_path(settings: ReverifySettings, unsafe: bool) -> Path:
    out = settings.output
    return out.with_name(f"unsafe_{out.name}") if unsafe else out


def guard_reverify_outputs(settings: ReverifySettings, *out_paths: Path) -> None:
    """Refuse outputs that are inputs (re-scoring ``R`` into ``R`` included) or exist as non-regular files,
    before anything is touched (see :func:`rewardgym.io.outputs.guard_outputs`)."""
    inputs = [(settings.inputs, "--inputs"), (settings.rollouts, "--rollouts"), *settings.read_files]
    for path in out_paths or (settings.output,):
        guard_outputs(RunOutputs(path).labelled(), inputs)


def reverify_config(cfg: GymConfig) -> tuple[GymConfig, dict[str, str]]:
    """The config without agents (and models nobody else needs) plus agent name → resources server name."""
    resources = [inst.name for inst in cfg.instances_of(RESOURCES_KIND)]
    if not resources:
        raise UsageError("reverify needs a resources server in the config (--resources-server NAME)")
    routes: dict[str, str] = {}
    for agent in cfg.instances_of(AGENTS_KIND):
        ref = agent.fields.get("resources_server")
        if isinstance(ref, Mapping) and isinstance(ref.get("name"), str):
            routes[agent.name] = str(ref["name"])
    data = cfg.to_dict()
    for agent in cfg.instances_of(AGENTS_KIND):
        data.pop(agent.name, None)
    needed = {
        str(value["name"])
        for name in resources
        for value in cfg.instance(name).fields.values()
        if isinstance(value, Mapping) and value.get("type") == "responses_api_models"
    }
    for model in cfg.instances_of("responses_api_models"):
        if model.name not in needed:
            data.pop(model.name, None)
    return GymConfig.from_dict(data), routes


def route_urls(
    routes: Mapping[str, str], resource_urls: Mapping[str, str], agents: set[str]
) -> dict[str, str]:
    """Agent name → URL of its resources server (a single resources server serves agents without a route)."""
    urls: dict[str, str] = {}
    for agent in agents:
        target = routes.get(agent)
        if target is None:
            if len(resource_urls) != 1:
                raise UsageError(
                    f"rows of agent {agent!r} cannot be routed: the config defines no agent of that name and "
                    f"has several resources servers ({', '.join(sorted(resource_urls))})"
                )
            target = next(iter(resource_urls))
        urls[agent] = resource_urls[target]
    return urls


async def reverify_modes(urls: Mapping[str, str]) -> dict[str, str]:
    modes: dict[str, str] = {}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        for name, url in urls.items():
            async with session.get(url.rstrip("/") + "/reverify_mode") as response:
                modes[name] = (
                    str(orjson.loads(await response.read())) if response.status == 200 else "unknown"
                )
    return modes


def _load_responses(path: Path) -> dict[tuple[int, int], Any]:
    """Key → stored response of every rollout of ``path``; a line that is an ATIF trajectory (``gym eval
    export --format atif``) gives the response rebuilt from its steps (:mod:`rewardgym.protocol.atif`)."""
    responses: dict[tuple[int, int], Any] = {}
    for number, row in iter_jsonl(path, what="Rollouts file"):
        if atif.is_trajectory(row):
            key = atif.key_of_trajectory(row, f"{path}:{number}")
            if key in responses:
                raise DataError(f"{path}:{number}: duplicate rollout key {key[0]}:{key[1]}")
            responses[key] = atif.response_of(row)
            continue
        key = key_of(row, f"{path}:{number}")
        if key in responses:
            raise DataError(f"{path}:{number}: duplicate rollout key {key[0]}:{key[1]}")
        if keys.RESPONSE not in row:
            raise DataError(f"{path}:{number}: rollout has no 'response' to re-verify")
        responses[key] = row[keys.RESPONSE]
    return responses


def _seed_successes(rollouts: Path, output: Path, present: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """Append every rollout whose key is not yet in ``output`` to it (flushed, so a crash keeps them);
    the keys now in the output."""
    seeded = set(present)
    with JsonlAppender(output) as appender:
        for number, row in iter_jsonl(rollouts, what="Rollouts file"):
            key = key_of(row, f"{rollouts}:{number}")
            if key not in seeded:
                seeded.add(key)
                appender.write(row)
    return seeded


def _judge_failures(failures: Path, skip: set[tuple[int, int]]) -> dict[tuple[int, int], Any]:
    """Key → stored response of each judge failure of the sidecar (first record per key; keys in ``skip``
    left out). A judge failure without a response (a sidecar written before responses were kept) is an
    error naming the line: it cannot be re-scored without inference."""
    found: dict[tuple[int, int], Any] = {}
    if not failures.exists():
        return found
    for number, row in iter_jsonl(failures, what="Failures file"):
        if row.get(keys.FAILURE_CLASS) != FailureClass.JUDGE_FAILED.value:
            continue
        key = key_of(row, f"{failures}:{number}")
        if key in skip or key in found:
            continue
        if keys.RESPONSE not in row:
            raise DataError(
                f"{failures}:{number}: judge failure without a stored response; re-collect it with "
                "'gym eval run --resume --retry-failed'"
            )
        found[key] = row[keys.RESPONSE]
    return found


def _payloads(inputs: Path, responses: Mapping[tuple[int, int], Any], prior: PriorRun) -> Iterator[Pending]:
    for number, row in iter_jsonl(inputs, what="Materialized inputs"):
        key = key_of(row, f"{inputs}:{number}")
        if key in prior.done or key not in responses:
            continue
        yield Pending({**row, keys.RESPONSE: responses[key]})


def agents_of(inputs: Path) -> set[str]:
    names: set[str] = set()
    for number, row in iter_jsonl(inputs, what="Materialized inputs"):
        ref = row.get(keys.AGENT_REF)
        name = ref.get("name") if isinstance(ref, dict) else None
        if not isinstance(name, str):
            raise DataError(f"{inputs}:{number}: materialized row has no agent_ref.name")
        names.add(name)
    return names


async def run_reverify(
    settings: ReverifySettings, urls: Mapping[str, str], out_path: Path, *, out: IO[str] | None = None
) -> tuple[DispatchStats, list[dict[str, Any]] | None]:
    """Re-verify every stored rollout through ``urls`` (agent name → resources server URL)."""
    out = out or sys.stdout
    outputs = RunOutputs(out_path)
    guard_reverify_outputs(settings, out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with run_lock(outputs):
        return await _reverify(settings, urls, outputs, out)


async def _reverify(
    settings: ReverifySettings, urls: Mapping[str, str], outputs: RunOutputs, out: IO[str]
) -> tuple[DispatchStats, list[dict[str, Any]] | None]:
    existing = [p for p in (outputs.rollouts, outputs.failures) if p.exists() and p.stat().st_size]
    if existing and not (settings.resume or settings.overwrite):
        raise UsageError(f"{existing[0]} exists; pass --overwrite to replace it or --resume to continue it")
    if settings.overwrite and not settings.resume:
        for path in outputs.stale():
            path.unlink(missing_ok=True)
    prior = load_prior_run(outputs) if settings.resume else PriorRun()
    if settings.judge_failed_only:
        prior.done |= _seed_successes(settings.rollouts, outputs.rollouts, prior.done)
        responses = _judge_failures(RunOutputs(settings.rollouts).failures, prior.done)
        out.write(f"Recovery: {len(responses)} judge-failed rollout(s) to re-score\n")
    else:
        responses = _load_responses(settings.rollouts)
    if settings.limit is not None:  # the first N, as NeMo Gym counts them
        responses = dict(list(responses.items())[: settings.limit])
    results = JsonlAppender(outputs.rollouts, encode=stored_line)
    failures = JsonlAppender(outputs.failures, encode=stored_line)

    def on_failure(row: dict[str, Any], failure: AttemptFailure, attempts: int) -> None:
        failures.write(failure_row(row, failure, attempts))

    client = AgentClient(
        urls, rollout_timeout_s=settings.timeout_s, max_connections=settings.concurrency, path="/verify"
    )
    dispatcher = Dispatcher(
        send=client.run,
        concurrency=settings.concurrency,
        policy=settings.retry,
        on_success=lambda _row, result: results.write(result),
        on_failure=on_failure,
    )
    try:
        async with client:
            stats = await dispatcher.run(_payloads(settings.inputs, responses, prior))
    finally:
        results.close()
        failures.close()
    out.write(f"Re-verified {stats.succeeded} rollouts ({stats.failed} failed) into {outputs.rollouts}\n")
    aggregate = None
    if not settings.disable_aggregation:
        groups = group_by_agent([outputs.rollouts])
        if groups:
            aggregate = await compute_aggregate_metrics(groups, urls)
            write_aggregate_metrics(outputs.aggregate_metrics, aggregate)
            out.write(format_key_metrics(aggregate) + "\n")
    return stats, aggregate
