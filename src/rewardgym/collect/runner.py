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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import IO, TYPE_CHECKING, Any

from rewardgym.collect.agent_client import AgentClient
from rewardgym.collect.aggregate import (
    StreamedGroups,
    compute_aggregate_metrics,
    format_key_metrics,
    group_by_agent,
    write_aggregate_metrics,
)
from rewardgym.collect.dispatch import Dispatcher, DispatchStats
from rewardgym.collect.outputs import RunOutputs
from rewardgym.collect.prepare import guard_run_outputs, prepare_run
from rewardgym.collect.progress import CollectionProgress
from rewardgym.collect.recorder import RolloutRecorder, failure_row, nemo_fields
from rewardgym.collect.resume import PriorRun, drop_failures, pending_rows
from rewardgym.collect.rollout_fields import relay_names
from rewardgym.collect.runlock import run_lock
from rewardgym.collect.settings import CollectSettings
from rewardgym.collect.watch import AgentDirectory, HeadWatch, StackGuard
from rewardgym.observe.capture import CaptureStore
from rewardgym.observe.projection import clear_capture
from rewardgym.stats.adaptive_policy import AdaptivePolicy

if TYPE_CHECKING:
    from rewardgym.collect.adaptive import RoundsResult

__all__ = ["CollectSummary", "failure_row", "format_summary", "run_collection"]


@dataclass
class CollectSummary:
    outputs: RunOutputs
    total: int
    resumed_done: int
    stats: DispatchStats
    stop_reason: str | None
    aggregate: list[dict[str, Any]] | None


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
    _announce(settings, outputs, out, total, len(prior.done))
    progress = CollectionProgress(total, len(prior.done), stream=out, live=settings.live_progress)
    # The aggregate metrics' rows, gathered as they are written when this run writes the whole file.
    streamed = StreamedGroups() if not settings.disable_aggregation and not prior.done else None
    observers = [streamed.add] if streamed is not None else []
    store = CaptureStore(settings.capture_dir) if settings.capture_dir is not None else None
    # A retried attempt starts from an empty capture, as in NeMo Gym.
    clear = partial(clear_capture, store) if store is not None else None
    projections = [nemo_fields(relay_names(agent_urls), store)]
    recorder = RolloutRecorder(outputs, progress, prior, projections, observers, before_attempt=clear)
    run = _Run(settings, outputs, agent_urls, headers, recorder)
    if on_dispatcher is not None:
        on_dispatcher(run.dispatcher)
    try:
        with _signals_stop(run.dispatcher):
            stats, rounds = await run.dispatch(prior, progress, adaptive, add_seed, out)
    finally:
        recorder.close()
    if recorder.recovered:
        drop_failures(outputs.failures, recorder.recovered)
    if rounds is not None and rounds.summary:
        out.write(rounds.summary + "\n")
    total += (rounds.added if rounds is not None else 0) + run.curriculum_added
    aggregate = await _close(settings, outputs, run, agent_urls, headers, out, streamed)
    return CollectSummary(outputs, total, len(prior.done), stats, run.dispatcher.stop_reason, aggregate)


def _announce(settings: CollectSettings, outputs: RunOutputs, out: IO[str], total: int, done: int) -> None:
    if settings.resume:
        out.write(f"Resuming: {done} of {total} rollouts already done\n")
    out.write(f"Materialized inputs: {outputs.materialized} ({total} rollouts)\n")
    # Never more workers than rollouts not yet done (the dispatcher starts one per row it pulls).
    workers = max(1, min(settings.concurrency, total - done))
    out.write(f"Querying with {workers} concurrent requests\n")
    out.flush()


class _Run:
    """The client, the dispatcher and the server guard of one run, wired to the recorder."""

    def __init__(
        self,
        settings: CollectSettings,
        outputs: RunOutputs,
        agent_urls: Mapping[str, str],
        headers: Mapping[str, str] | None,
        recorder: RolloutRecorder,
    ) -> None:
        self.settings, self.outputs = settings, outputs
        self.curriculum_added = 0
        """Rollouts the ``--from-curriculum`` batches after the first added."""
        directory = agent_urls if isinstance(agent_urls, AgentDirectory) else None
        self.client = AgentClient(
            agent_urls,
            rollout_timeout_s=settings.rollout_timeout_s,
            max_connections=settings.concurrency,
            headers=headers,
            replicas=directory.replicas if directory is not None else None,
        )
        self.guard: StackGuard | None = directory.guard if directory is not None else None
        self.watch: HeadWatch | None = None
        if directory is not None and self.guard is None and directory.head_url:
            self.watch = HeadWatch(directory.head_url, headers=headers, on_death=self._on_death)
            self.guard = self.watch
        recorder.alarm = self.guard.alarm if self.guard is not None else None
        self.dispatcher = Dispatcher(
            send=recorder.timed(self.client.run),
            concurrency=settings.concurrency,
            policy=settings.retry,
            on_success=recorder.on_success,
            on_failure=recorder.on_failure,
            on_retry=recorder.on_retry,
            fail_fast=settings.fail_fast,
            confirm=self.guard.healthy if self.guard is not None else None,
        )

    def _on_death(self, message: str) -> None:
        self.dispatcher.stop(message)

    async def dispatch(
        self,
        prior: PriorRun,
        progress: CollectionProgress,
        adaptive: AdaptivePolicy | None,
        add_seed: bool,
        out: IO[str],
    ) -> tuple[DispatchStats, RoundsResult | None]:
        """The pending rows, then (adaptive) the rounds; returns the stats and the rounds' result."""
        settings, outputs = self.settings, self.outputs
        pending = pending_rows(
            outputs.materialized,
            prior,
            max_attempts=settings.retry.max_attempts,
            retry_failed=settings.retry_failed,
        )
        rounds: RoundsResult | None = None
        async with self.client, contextlib.AsyncExitStack() as stack:
            if self.watch is not None:
                await stack.enter_async_context(self.watch)
            with progress:
                stats = await self.dispatcher.run(pending)
                if adaptive is not None:
                    from rewardgym.collect.adaptive import run_rounds  # numpy: only for an adaptive run

                    rounds = await run_rounds(
                        adaptive,
                        outputs.materialized,
                        outputs.rollouts,
                        add_seed=add_seed,
                        dispatch=self.dispatcher.run,
                        keep_going=lambda: self.dispatcher.stop_reason is None,
                        on_added=progress.grow,
                        out=out,
                    )
                if settings.curriculum is not None:  # --from-curriculum: the next batches, rewards reported
                    self.curriculum_added = await settings.curriculum.run(
                        outputs.materialized,
                        outputs.rollouts,
                        settings.materialize,
                        dispatch=self.dispatcher.run,
                        keep_going=lambda: self.dispatcher.stop_reason is None,
                        on_added=progress.grow,
                        out=out,
                    )
        return stats, rounds


@contextlib.contextmanager
def _signals_stop(dispatcher: Dispatcher) -> Iterator[None]:
    """SIGINT / SIGTERM stop the dispatcher ("interrupted"); a second one raises KeyboardInterrupt."""
    loop = asyncio.get_running_loop()
    interrupts = {"count": 0}

    def on_signal() -> None:
        interrupts["count"] += 1
        dispatcher.stop("interrupted")
        if interrupts["count"] > 1:
            raise KeyboardInterrupt

    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        yield
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def _close(
    settings: CollectSettings,
    outputs: RunOutputs,
    run: _Run,
    agent_urls: Mapping[str, str],
    headers: Mapping[str, str] | None,
    out: IO[str],
    streamed: StreamedGroups | None,
) -> list[dict[str, Any]] | None:
    """Say why the run stopped, or (finished) compute and write the aggregate metrics."""
    guard, stop_reason = run.guard, run.dispatcher.stop_reason
    death = guard.death if guard is not None else None
    if death is not None:
        assert guard is not None
        out.write(
            f"\nStopped: {death}.\nCompleted rollouts are saved in {outputs.rollouts}; the rollouts this "
            f"stopped are not recorded as failures.\n{guard.resume_hint}\n"
        )
    elif stop_reason == "interrupted":
        pass  # the summary says it: "Interrupted: N of M rollouts stored …" (format_summary)
    elif stop_reason is not None:
        out.write(
            f"\nStopped ({stop_reason}). Completed rollouts are saved in {outputs.rollouts}.\n"
            f"Resume with the same command plus --resume.\n"
        )
    elif not settings.disable_aggregation:
        groups = streamed.groups() if streamed is not None else group_by_agent([outputs.rollouts])
        if groups:
            aggregate = await compute_aggregate_metrics(groups, agent_urls, headers=headers)
            write_aggregate_metrics(outputs.aggregate_metrics, aggregate)
            out.write(format_key_metrics(aggregate) + "\n")
            return aggregate
    return None


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
