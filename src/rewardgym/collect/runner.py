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
from dataclasses import dataclass
from typing import IO, Any

from rewardgym.collect.adaptive import RoundsResult, run_rounds
from rewardgym.collect.agent_client import AgentClient
from rewardgym.collect.aggregate import (
    compute_aggregate_metrics,
    format_key_metrics,
    group_by_agent,
    write_aggregate_metrics,
)
from rewardgym.collect.dispatch import Dispatcher, DispatchStats
from rewardgym.collect.failures import AttemptFailure
from rewardgym.collect.outputs import RunOutputs, stored_line
from rewardgym.collect.prepare import guard_run_outputs, prepare_run
from rewardgym.collect.progress import CollectionProgress
from rewardgym.collect.resume import drop_failures, key_of, pending_rows
from rewardgym.collect.rollout_fields import LEGACY_RESULT_TYPE, perf_of, relay_name, relay_names
from rewardgym.collect.runlock import run_lock
from rewardgym.collect.settings import CollectSettings
from rewardgym.collect.watch import AgentDirectory, HeadWatch, StackGuard
from rewardgym.io.jsonl import JsonlAppender
from rewardgym.observe.capture import CaptureStore
from rewardgym.observe.projection import clear_capture, observe_row
from rewardgym.protocol import keys


@dataclass
class CollectSummary:
    outputs: RunOutputs
    total: int
    resumed_done: int
    stats: DispatchStats
    stop_reason: str | None
    aggregate: list[dict[str, Any]] | None


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
    if failure.response is not None:  # a judge failure: kept to re-score it (reverify --judge-failed-only)
        record[keys.RESPONSE] = failure.response
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
    total, prior, adaptive, add_seed = prepare_run(settings, outputs, out, agent_urls)
    resumed_done = len(prior.done)
    if settings.resume:
        out.write(f"Resuming: {resumed_done} of {total} rollouts already done\n")
    out.write(f"Materialized inputs: {outputs.materialized} ({total} rollouts)\n")
    # Never more workers than rollouts not yet done (the dispatcher starts one per row it pulls).
    workers = max(1, min(settings.concurrency, total - resumed_done))
    out.write(f"Querying with {workers} concurrent requests\n")
    out.flush()

    rollouts = JsonlAppender(outputs.rollouts, encode=stored_line)
    failures = JsonlAppender(outputs.failures, encode=stored_line)
    progress = CollectionProgress(total, resumed_done, stream=out, live=settings.live_progress)
    recovered: set[tuple[int, int]] = set()
    guard: StackGuard | None = None
    watch: HeadWatch | None = None

    relays = relay_names(agent_urls)
    # The wall clock of each successful /run, keyed by the result object until on_success (called at once
    # after the attempt, in the same task) takes it: the dispatcher stays unaware of timing.
    latencies: dict[int, float] = {}

    store = CaptureStore(settings.capture_dir) if settings.capture_dir is not None else None

    async def send(row: dict[str, Any]) -> dict[str, Any]:
        if store is not None:  # a retried attempt starts from an empty capture, as in NeMo Gym
            clear_capture(store, row)
        started = time.perf_counter()
        result = await client.run(row)
        latencies[id(result)] = (time.perf_counter() - started) * 1000.0
        return result

    def on_success(row: dict[str, Any], result: dict[str, Any]) -> None:
        agent = row[keys.AGENT_REF]["name"]
        result[keys.ENVIRONMENT_SERVER] = relays.get(agent) or relay_name(agent, None)
        result[keys.RESULT_TYPE] = LEGACY_RESULT_TYPE
        latency = latencies.pop(id(result), None)
        if store is None:
            result[keys.NG_PERF] = perf_of(result, latency)
        else:
            observe_row(store, row, result, latency)
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
