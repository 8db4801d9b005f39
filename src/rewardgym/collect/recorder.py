"""Where each finished rollout goes during a collection run.

A :class:`RolloutRecorder` is handed to the :class:`~rewardgym.collect.dispatch.Dispatcher` as its
callbacks. A successful rollout is completed by the recorder's *projections* in order — by default NeMo Gym
0.7.0's ``_ng_environment_server``, ``_ng_result_type`` and ``ng_perf``
(:mod:`rewardgym.collect.rollout_fields`); a further per-row field is one more projection — then appended
and flushed to the rollouts file (completion order), shown to the *observers* (the aggregate metrics'
groups, gathered from the stream rather than by reading the file back) and counted by the progress. A final
failure is appended to the failures file. A key of the earlier run's failures that now succeeded is remembered
(:attr:`RolloutRecorder.recovered`) so the runner can drop it from the failures file at the end.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from rewardgym.collect.failures import AttemptFailure
from rewardgym.collect.outputs import RunOutputs, stored_line
from rewardgym.collect.progress import CollectionProgress
from rewardgym.collect.resume import PriorRun, key_of
from rewardgym.collect.rollout_fields import LEGACY_RESULT_TYPE, perf_of, relay_name
from rewardgym.io.jsonl import JsonlAppender
from rewardgym.observe.capture import CaptureStore
from rewardgym.observe.projection import observe_row
from rewardgym.protocol import keys

Row = dict[str, Any]
Projection = Callable[[Row, Row, float | None], None]
"""``(materialized row, result, latency ms)`` → fills fields of ``result`` before it is stored."""


def failure_row(row: Row, failure: AttemptFailure, attempts: int) -> Row:
    """The failures file's line of a rollout that failed for good."""
    record: Row = {
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


def nemo_fields(relays: Mapping[str, str], store: CaptureStore | None = None) -> Projection:
    """NeMo Gym 0.7.0's per-row fields (:mod:`rewardgym.collect.rollout_fields`), in its key order; with a
    capture ``store`` (``++observability_enabled``) the capture, the trajectory and 0.7.0's ``ng_perf``
    (:mod:`rewardgym.observe.projection`) instead of our ``ng_perf``."""

    def project(row: Row, result: Row, latency_ms: float | None) -> None:
        agent = row[keys.AGENT_REF]["name"]
        result[keys.ENVIRONMENT_SERVER] = relays.get(agent) or relay_name(agent, None)
        result[keys.RESULT_TYPE] = LEGACY_RESULT_TYPE
        if store is None:
            result[keys.NG_PERF] = perf_of(result, latency_ms)
        else:
            observe_row(store, row, result, latency_ms)

    return project


class RolloutRecorder:
    """The dispatcher's callbacks of one run (module docstring); :meth:`close` when the run ends."""

    def __init__(
        self,
        outputs: RunOutputs,
        progress: CollectionProgress,
        prior: PriorRun,
        projections: Sequence[Projection],
        observers: Sequence[Callable[[Row], None]] = (),
        before_attempt: Callable[[Row], None] | None = None,
    ) -> None:
        self._rollouts = JsonlAppender(outputs.rollouts, encode=stored_line)
        self._failures = JsonlAppender(outputs.failures, encode=stored_line)
        self._progress = progress
        self._prior_attempts = prior.attempts
        self._projections = tuple(projections)
        self._observers = tuple(observers)
        self._before_attempt = before_attempt
        # The wall clock of each successful /run, keyed by the result object until on_success (called at
        # once after the attempt, in the same task) takes it: the dispatcher stays unaware of timing.
        self._latencies: dict[int, float] = {}
        self.recovered: set[tuple[int, int]] = set()
        """Keys of the earlier run's failures that succeeded in this run."""
        self.alarm: Callable[[], None] | None = None
        """Called on every retry (the guard that checks whether a server died)."""

    def timed(self, run: Callable[[Row], Awaitable[Row]]) -> Callable[[Row], Awaitable[Row]]:
        """``run`` (one ``/run`` call) with its wall clock kept for the row's ``ng_perf``."""

        async def send(row: Row) -> Row:
            if self._before_attempt is not None:
                self._before_attempt(row)
            started = time.perf_counter()
            result = await run(row)
            self._latencies[id(result)] = (time.perf_counter() - started) * 1000.0
            return result

        return send

    def on_success(self, row: Row, result: Row) -> None:
        latency = self._latencies.pop(id(result), None)
        for project in self._projections:
            project(row, result, latency)
        self._rollouts.write(result)
        for observe in self._observers:
            observe(result)
        self._progress.success(row[keys.AGENT_REF]["name"], float(result[keys.REWARD]))
        if self._prior_attempts:
            key = key_of(row, "materialized row")
            if key in self._prior_attempts:
                self.recovered.add(key)

    def on_failure(self, row: Row, failure: AttemptFailure, attempts: int) -> None:
        self._failures.write(failure_row(row, failure, attempts))
        self._progress.failure()

    def on_retry(self, row: Row, failure: AttemptFailure, attempts: int) -> None:
        self._progress.retry()
        if self.alarm is not None:
            self.alarm()

    def close(self) -> None:
        self._rollouts.close()
        self._failures.close()
