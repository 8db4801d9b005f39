"""One collection run: materialize (or resume), dispatch, record, aggregate.

What ``--resume`` guarantees: the materialized inputs of the first run are the source of truth (``--input``
is not re-read); the run fingerprint must match (or ``--force``); keys already in the rollouts file are
never run again; a torn last line is cut off and its rollout re-run. Hence after any number of crashes
(even ``kill -9`` mid-write) and resumes, the rollouts file holds each materialized key at most once, and
exactly once when every rollout eventually succeeds.

Servers dying during a run: the agents come as an :class:`~rewardgym.collect.watch.AgentDirectory`, whose
guard (the served stack, or a :class:`~rewardgym.collect.watch.HeadWatch` of the head registry for
``--no-serve``) is alarmed by failed attempts and asked before any transient failure is recorded. When a
server died the run stops, the rollouts it interrupted stay pending (never recorded as failures), and the
output names the server and how to resume.

Adaptive runs (``settings.adaptive``, :mod:`rewardgym.collect.adaptive`): after the dispatch of the
materialized rows, rounds append rows for the unsettled tasks and dispatch them, under the same
guarantees; a resume finishes the appended rows, then continues the rounds.

The rollouts and failures files partition the keys they hold: a failed key that later succeeds (on
``--resume``) is removed from the failures file (atomically) at the end of that run, or when the next resume
starts if the run was killed in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from rewardgym.collect.adaptive import RoundsResult, repair_materialized_tail, run_rounds
from rewardgym.collect.agent_client import AgentClient
from rewardgym.collect.aggregate import (
    compute_aggregate_metrics,
    format_key_metrics,
    group_by_agent,
    write_aggregate_metrics,
)
from rewardgym.collect.dispatch import Dispatcher, DispatchStats
from rewardgym.collect.failures import AttemptFailure, RetryPolicy
from rewardgym.collect.fingerprint import (
    build_fingerprint,
    describe_changes,
    differences,
    read_fingerprint,
    write_fingerprint,
)
from rewardgym.collect.materialize import MaterializeOptions, iter_materialized
from rewardgym.collect.outputs import RunOutputs
from rewardgym.collect.progress import CollectionProgress
from rewardgym.collect.resume import PriorRun, drop_failures, key_of, load_prior_run, pending_rows
from rewardgym.collect.rollout_fields import LEGACY_RESULT_TYPE, perf_of, relay_name, relay_names
from rewardgym.collect.runlock import run_lock
from rewardgym.collect.watch import AgentDirectory, HeadWatch, StackGuard
from rewardgym.errors import DataError, UsageError
from rewardgym.io.jsonl import JsonlAppender, iter_jsonl
from rewardgym.io.outputs import atomic_writer, guard_outputs
from rewardgym.metrics.adaptive import AdaptivePolicy
from rewardgym.protocol import keys


@dataclass
class CollectSettings:
    """Everything that shapes one collection run."""

    output: Path
    """The rollouts file (``--output``); sibling files are derived from it."""
    input: Path | None = None
    """The input rows (``--input``); not read on ``--resume``."""
    materialize: MaterializeOptions = field(default_factory=MaterializeOptions)
    concurrency: int = 32
    """Rollouts in flight at once (``--concurrency``)."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    rollout_timeout_s: float = 900.0
    """Timeout of one ``/run`` call (``++rollout_timeout_s``)."""
    fail_fast: bool = False
    resume: bool = False
    force: bool = False
    """Resume even though the fingerprint changed."""
    retry_failed: bool = False
    """On resume, run failed keys again regardless of the attempts they used."""
    disable_aggregation: bool = False
    shard: tuple[int, int] | None = None
    """``(i, n)`` of ``--shard i/n``: only the rows whose task index is ``i`` modulo ``n`` (all repeats of a
    task stay in one shard, so ``gym eval aggregate`` merges disjoint shards)."""
    fingerprint_settings: Mapping[str, Any] = field(default_factory=dict)
    """Redacted settings recorded in the run fingerprint (config minus secrets, repeats, overrides)."""
    live_progress: bool | None = None
    read_files: tuple[tuple[Path, str], ...] = ()
    """Other files the command reads (config files, ``--prompt-config``), each with what it is: no output
    may be one of them."""
    adaptive: AdaptivePolicy | None = None
    """``--adaptive``: materialize ``initial`` repeats, then rounds (:mod:`rewardgym.collect.adaptive`). On
    resume, None means "as the run was started" (its fingerprint says)."""


@dataclass
class CollectSummary:
    outputs: RunOutputs
    total: int
    resumed_done: int
    stats: DispatchStats
    stop_reason: str | None
    aggregate: list[dict[str, Any]] | None


def _check_output_location(output: Path) -> None:
    if output.is_dir():
        raise UsageError(f"--output must be a file path, but '{output}' is a folder")
    for parent in output.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"--output '{output}': '{parent}' is a file, not a folder")
            break


def guard_run_outputs(settings: CollectSettings) -> RunOutputs:
    """Refuse, before anything is touched, outputs that are inputs or exist as non-regular files (see
    :func:`rewardgym.io.outputs.guard_outputs`); the CLI calls this before it starts any server."""
    outputs = RunOutputs(settings.output)
    _check_output_location(settings.output)
    guard_outputs(outputs.labelled(), [(settings.input, "--input"), *settings.read_files])
    return outputs


def _clear_stale(outputs: RunOutputs, out: IO[str]) -> None:
    for path in outputs.stale():
        if path.exists():
            size = path.stat().st_size
            if size and path in (outputs.rollouts, outputs.failures):
                out.write(
                    f"Warning: removing {path} from an earlier run ({size} bytes); use --resume to keep it\n"
                )
            path.unlink()


def _materialize(settings: CollectSettings, handle: IO[bytes], out: IO[str]) -> tuple[set[str], int]:
    """Write the materialized rows to ``handle``; returns (agents named, row count)."""
    if settings.input is None:
        raise UsageError("--input is required (unless --resume)")
    agents: set[str] = set()
    count = 0
    for row in iter_materialized(
        settings.input, settings.materialize, lambda message: out.write(f"Warning: {message}\n")
    ):
        if settings.shard is not None and row[keys.TASK_INDEX] % settings.shard[1] != settings.shard[0]:
            continue
        agents.add(row[keys.AGENT_REF]["name"])
        handle.write(orjson.dumps(row) + b"\n")
        count += 1
    if count == 0:
        raise DataError(f"Input file '{settings.input}' (--input) holds no rows: there is nothing to collect")
    policy = settings.adaptive
    if policy is not None and policy.budget is not None and count > policy.budget:
        raise UsageError(
            f"--adaptive-budget {policy.budget} is smaller than the first round: {count} rollouts "
            f"(--adaptive-initial {policy.initial} per task); raise the budget or lower "
            "--adaptive-initial"  # raised before the materialized file is renamed into place
        )
    return agents, count


def _agents_in(materialized: Path) -> tuple[set[str], int]:
    agents: set[str] = set()
    total = 0
    for number, row in iter_jsonl(materialized, what="Materialized inputs"):
        total += 1
        ref = row.get(keys.AGENT_REF)
        name = ref.get("name") if isinstance(ref, dict) else None
        if not isinstance(name, str):
            raise DataError(f"{materialized}:{number}: materialized row has no agent_ref.name")
        agents.add(name)
    return agents, total


def _check_agents(needed: set[str], available: Mapping[str, str]) -> None:
    missing = sorted(needed - set(available))
    if missing:
        listed = ", ".join(sorted(available)) or "none"
        raise UsageError(
            f"rows name agent(s) {', '.join(repr(m) for m in missing)} but no such agent is running "
            f"(available: {listed})"
        )


def _prepare(
    settings: CollectSettings, outputs: RunOutputs, out: IO[str], agent_urls: Mapping[str, str]
) -> tuple[int, PriorRun, AdaptivePolicy | None, bool]:
    """Validate everything, then (fresh run) replace the earlier run's outputs, or (resume) load them.

    A fresh run that is refused (bad input, unknown agent…) leaves the earlier run's files untouched: the
    new materialized file is built aside and only swapped in once every check passed.
    """
    if settings.resume:
        if not outputs.materialized.exists():
            raise UsageError(f"cannot resume: no previous run found ({outputs.materialized} does not exist)")
        old = read_fingerprint(outputs.fingerprint)
        prefix = old.get("materialized_inputs_bytes")
        fingerprint_settings = dict(settings.fingerprint_settings)
        recorded: dict[str, Any] = old["settings"] if isinstance(old.get("settings"), dict) else {}
        if isinstance(prefix, int):  # an adaptive run: later rounds append rows
            torn = repair_materialized_tail(outputs.materialized)
            if torn is not None:
                out.write(f"Note: {outputs.materialized}:{torn.line_number} was cut short by a crash\n")
            # The adaptive settings given again are compared; the others are the recorded ones.
            given = fingerprint_settings.get("adaptive") or {}
            fingerprint_settings["adaptive"] = {**(recorded.get("adaptive") or {}), **given}
        new = build_fingerprint(
            materialized=outputs.materialized,
            input_path=settings.input,
            settings=fingerprint_settings,
            prefix_bytes=prefix if isinstance(prefix, int) else None,
        )
        changed = differences(old, new)
        if changed and not settings.force:
            raise UsageError(
                "cannot resume: the run changed since it started ("
                + describe_changes(old, new, changed)
                + "); start a fresh run, or pass --force to resume anyway"
            )
        if changed:
            described = describe_changes(old, new, changed)
            out.write(f"Warning: resuming although these changed: {described} (--force)\n")
            write_fingerprint(outputs.fingerprint, new)
        prior = load_prior_run(outputs)
        recovered = prior.done & prior.attempts.keys()
        if recovered:  # succeeded by a run killed before it could tidy the failures file
            drop_failures(outputs.failures, recovered)
            for key in recovered:
                prior.attempts.pop(key, None)
                prior.permanent.discard(key)
        if prior.torn is not None:
            out.write(
                f"Note: {outputs.rollouts}:{prior.torn.line_number} was cut short by a crash; "
                "that rollout will run again\n"
            )
        needed, total = _agents_in(outputs.materialized)
        _check_agents(needed, agent_urls)
        policy = fingerprint_settings.get("adaptive") if isinstance(prefix, int) else None
        add_seed = (recorded.get("materialize") or {}).get("add_seed", settings.materialize.add_seed)
        return (
            total,
            prior,
            AdaptivePolicy.from_dict(policy) if isinstance(policy, dict) else None,
            bool(add_seed),
        )
    # Built in a temp file (see rewardgym.io.outputs) renamed over the materialized file only at the end of
    # the block, once every check passed and the earlier run's outputs are cleared.
    with atomic_writer(outputs.materialized) as handle:
        needed, total = _materialize(settings, handle, out)
        _check_agents(needed, agent_urls)
        _clear_stale(outputs, out)
    write_fingerprint(
        outputs.fingerprint,
        build_fingerprint(
            materialized=outputs.materialized,
            input_path=settings.input,
            settings=dict(settings.fingerprint_settings)
            | ({} if settings.adaptive is None else {"adaptive": settings.adaptive.as_dict()}),
            prefix_bytes=outputs.materialized.stat().st_size if settings.adaptive is not None else None,
        ),
    )
    return total, PriorRun(), settings.adaptive, settings.materialize.add_seed


def failure_row(row: dict[str, Any], failure: AttemptFailure, attempts: int) -> dict[str, Any]:
    record: dict[str, Any] = {
        keys.TASK_INDEX: row[keys.TASK_INDEX],
        keys.ROLLOUT_INDEX: row[keys.ROLLOUT_INDEX],
        keys.AGENT_REF: row.get(keys.AGENT_REF),
        keys.FAILURE_CLASS: failure.failure_class.value,
        "_ng_failure_reason": failure.reason,
        "attempts": attempts,
        "permanent": not failure.transient,
    }
    if failure.status is not None:
        record["_ng_failure_http_status"] = failure.status
    return record


async def run_collection(
    settings: CollectSettings,
    agent_urls: Mapping[str, str],
    *,
    out: IO[str] | None = None,
    headers: Mapping[str, str] | None = None,
    on_dispatcher: Callable[[Dispatcher], None] | None = None,
) -> CollectSummary:
    """Run (or resume) a collection against running agents at ``agent_urls`` (name → base URL).

    ``headers`` go with every request (e.g. the shared auth token); ``on_dispatcher`` receives the
    dispatcher before it starts, so a caller can stop it (e.g. when a server dies).
    """
    out = out or sys.stdout
    outputs = guard_run_outputs(settings)
    settings.output.parent.mkdir(parents=True, exist_ok=True)
    with run_lock(outputs):
        return await _collect(settings, outputs, agent_urls, out, headers, on_dispatcher)


async def _collect(
    settings: CollectSettings,
    outputs: RunOutputs,
    agent_urls: Mapping[str, str],
    out: IO[str],
    headers: Mapping[str, str] | None,
    on_dispatcher: Callable[[Dispatcher], None] | None,
) -> CollectSummary:
    total, prior, adaptive, add_seed = _prepare(settings, outputs, out, agent_urls)
    resumed_done = len(prior.done)
    if settings.resume:
        out.write(f"Resuming: {resumed_done} of {total} rollouts already done\n")
    out.write(f"Materialized inputs: {outputs.materialized} ({total} rollouts)\n")
    # Never more workers than rollouts not yet done (the dispatcher starts one per row it pulls).
    workers = max(1, min(settings.concurrency, total - resumed_done))
    out.write(f"Querying with {workers} concurrent requests\n")
    out.flush()

    rollouts = JsonlAppender(outputs.rollouts)
    failures = JsonlAppender(outputs.failures)
    progress = CollectionProgress(total, resumed_done, stream=out, live=settings.live_progress)
    recovered: set[tuple[int, int]] = set()
    guard: StackGuard | None = None
    watch: HeadWatch | None = None

    relays = relay_names(agent_urls)
    # The wall clock of each successful /run, keyed by the result object until on_success (called at once
    # after the attempt, in the same task) takes it: the dispatcher stays unaware of timing.
    latencies: dict[int, float] = {}

    async def send(row: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        result = await client.run(row)
        latencies[id(result)] = (time.perf_counter() - started) * 1000.0
        return result

    def on_success(row: dict[str, Any], result: dict[str, Any]) -> None:
        agent = row[keys.AGENT_REF]["name"]
        result[keys.ENVIRONMENT_SERVER] = relays.get(agent) or relay_name(agent, None)
        result[keys.RESULT_TYPE] = LEGACY_RESULT_TYPE
        result[keys.NG_PERF] = perf_of(result, latencies.pop(id(result), None))
        rollouts.write(result)
        progress.success(row[keys.AGENT_REF]["name"], float(result[keys.REWARD]))
        if prior.attempts:
            key = key_of(row, "materialized row")
            if key in prior.attempts:
                recovered.add(key)

    def on_failure(row: dict[str, Any], failure: AttemptFailure, attempts: int) -> None:
        failures.write(failure_row(row, failure, attempts))
        progress.failure()

    def on_retry(row: dict[str, Any], failure: AttemptFailure, attempts: int) -> None:
        progress.retry()
        if guard is not None:
            guard.alarm()

    client = AgentClient(
        agent_urls,
        rollout_timeout_s=settings.rollout_timeout_s,
        max_connections=settings.concurrency,
        headers=headers,
        replicas=agent_urls.replicas if isinstance(agent_urls, AgentDirectory) else None,
    )
    if isinstance(agent_urls, AgentDirectory):
        guard = agent_urls.guard
        if guard is None and agent_urls.head_url:

            def on_death(message: str) -> None:
                dispatcher.stop(message)  # bound below, before the watch starts

            watch = HeadWatch(agent_urls.head_url, headers=headers, on_death=on_death)
            guard = watch
    dispatcher = Dispatcher(
        send=send,
        concurrency=settings.concurrency,
        policy=settings.retry,
        on_success=on_success,
        on_failure=on_failure,
        on_retry=on_retry,
        fail_fast=settings.fail_fast,
        confirm=guard.healthy if guard is not None else None,
    )
    if on_dispatcher is not None:
        on_dispatcher(dispatcher)
    loop = asyncio.get_running_loop()
    interrupts = {"count": 0}

    def on_signal() -> None:
        interrupts["count"] += 1
        dispatcher.stop("interrupted")
        if interrupts["count"] > 1:
            raise KeyboardInterrupt

    rounds: RoundsResult | None = None
    pending = pending_rows(
        outputs.materialized,
        prior,
        max_attempts=settings.retry.max_attempts,
        retry_failed=settings.retry_failed,
    )
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        async with client, contextlib.AsyncExitStack() as stack:
            if watch is not None:
                await stack.enter_async_context(watch)
            with progress:
                stats = await dispatcher.run(pending)
                if adaptive is not None:
                    rounds = await run_rounds(
                        adaptive,
                        outputs.materialized,
                        outputs.rollouts,
                        add_seed=add_seed,
                        dispatch=dispatcher.run,
                        keep_going=lambda: dispatcher.stop_reason is None,
                        on_added=progress.grow,
                        out=out,
                    )
                    total += rounds.added
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        rollouts.close()
        failures.close()
    if recovered:
        drop_failures(outputs.failures, recovered)
    if rounds is not None and rounds.summary:
        out.write(rounds.summary + "\n")

    aggregate: list[dict[str, Any]] | None = None
    death = guard.death if guard is not None else None
    if death is not None:
        assert guard is not None
        out.write(
            f"\nStopped: {death}.\nCompleted rollouts are saved in {outputs.rollouts}; the rollouts this "
            f"stopped are not recorded as failures.\n{guard.resume_hint}\n"
        )
    elif dispatcher.stop_reason == "interrupted":
        pass  # the summary says it: "Interrupted: N of M rollouts stored …" (format_summary)
    elif dispatcher.stop_reason is not None:
        out.write(
            f"\nStopped ({dispatcher.stop_reason}). Completed rollouts are saved in {outputs.rollouts}.\n"
            f"Resume with the same command plus --resume.\n"
        )
    elif not settings.disable_aggregation:
        groups = group_by_agent([outputs.rollouts])
        if groups:
            aggregate = await compute_aggregate_metrics(groups, agent_urls, headers=headers)
            write_aggregate_metrics(outputs.aggregate_metrics, aggregate)
            out.write(format_key_metrics(aggregate) + "\n")
    return CollectSummary(outputs, total, resumed_done, stats, dispatcher.stop_reason, aggregate)


def _headline(summary: CollectSummary) -> str:
    stored = summary.resumed_done + summary.stats.succeeded
    counts = f"{stored} of {summary.total} rollouts stored ({summary.stats.succeeded} this run)"
    if summary.stop_reason is None:
        return "Finished rollout collection! View results at:"
    if summary.stop_reason == "interrupted":
        return f"Interrupted: {counts}. Resume with the same command plus --resume. Files:"
    return f"Collection stopped ({summary.stop_reason}): {counts}. Files:"


def _aggregate_line(summary: CollectSummary) -> str:
    if summary.aggregate is not None:
        return f"Aggregate metrics: {summary.outputs.aggregate_metrics}"
    if summary.stop_reason is not None:
        return "Aggregate metrics: not computed (the run did not finish)"
    if summary.resumed_done + summary.stats.succeeded == 0:
        return "Aggregate metrics: not computed (no rollout succeeded)"
    return "Aggregate metrics: not computed (aggregation disabled)"


def format_summary(summary: CollectSummary) -> str:
    stats = summary.stats
    lines = [
        "",
        _headline(summary),
        f"Fully materialized inputs: {summary.outputs.materialized}",
        f"Rollouts: {summary.outputs.rollouts}",
        f"Failures: {summary.outputs.failures} ({stats.failed} this run"
        + (
            f": {', '.join(f'{k} {v}' for k, v in sorted(stats.failures_by_class.items()))}"
            if stats.failed
            else ""
        )
        + ")",
        _aggregate_line(summary),
        f"Rollouts this run: {stats.succeeded} succeeded, {stats.failed} failed, {stats.retries} retries",
    ]
    return "\n".join(lines)
