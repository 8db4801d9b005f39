"""Concurrent dispatch of rollouts with bounded memory, in-place retries and crash-safe recording.

Contract:
- At most ``concurrency`` rollouts are in flight, served by worker coroutines that pull rows lazily from
  an iterator: 10^6 pending rows never become 10^6 coroutines or 10^6 resident results. Workers are
  started one per row pulled, up to ``concurrency``: a huge ``--concurrency`` over a few rows left starts
  only as many workers as there are rows (``min(concurrency, rows left)``), never idle ones.
- A successful result is stamped with ``_ng_task_index``, ``_ng_rollout_index`` and ``agent_ref`` from its
  request row and handed to ``on_success`` at once (the caller appends + flushes it).
- A failed attempt is retried in place (see :mod:`rewardgym.collect.failures`); when attempts run out, or
  the failure is permanent, ``on_failure`` receives it. A failure never reaches ``on_success``.
- :meth:`Dispatcher.stop` stops pulling new rows; in-flight rollouts get ``grace_s`` to finish, then are
  cancelled (they are simply absent from the outputs, so ``--resume`` runs them again). Once stopping, a
  transient failure is no longer recorded either: its rollout is left for ``--resume``.
- An ``upstream_auth`` failure (a model upstream refused its API key) stops the run at once; that rollout
  is left for ``--resume`` rather than recorded, since no row can succeed until the key is fixed.
- ``confirm`` (optional) is awaited before a transient failure is recorded as final; when it answers
  ``False`` (a server died: the failure is not the rollout's fault) the rollout is left for ``--resume``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rewardgym.collect.failures import AttemptFailure, FailureClass, RetryPolicy
from rewardgym.protocol import keys

Row = dict[str, Any]
SendFn = Callable[[Row], Awaitable[Row]]


@dataclass
class DispatchStats:
    """Counters of one dispatch (this process only; resumed rows are counted by the caller)."""

    succeeded: int = 0
    failed: int = 0
    retries: int = 0
    cancelled: int = 0
    failures_by_class: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Pending:
    """A row to run and the attempts it already used in earlier runs."""

    row: Row
    prior_attempts: int = 0


def stamp(result: Row, row: Row, attempts: int) -> Row:
    """Copy the identity of the request row onto its result (NeMo Gym's row stamping)."""
    result[keys.TASK_INDEX] = row[keys.TASK_INDEX]
    result[keys.ROLLOUT_INDEX] = row[keys.ROLLOUT_INDEX]
    if keys.AGENT_REF in row:
        result[keys.AGENT_REF] = row[keys.AGENT_REF]
    for optional in (keys.SKILLS_REF, keys.ROLLOUT_ID):
        if optional in row:
            result[optional] = row[optional]
    if attempts > 1:
        result[keys.ATTEMPT_INDEX] = attempts - 1
    return result


class Dispatcher:
    """Runs rows through ``send`` with bounded concurrency and retries."""

    def __init__(
        self,
        send: SendFn,
        *,
        concurrency: int,
        policy: RetryPolicy,
        on_success: Callable[[Row, Row], None],
        on_failure: Callable[[Row, AttemptFailure, int], None],
        on_retry: Callable[[Row, AttemptFailure, int], None] | None = None,
        fail_fast: bool = False,
        grace_s: float = 5.0,
        seed: int | None = None,
        confirm: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self._send = send
        self._concurrency = concurrency
        self._policy = policy
        self._on_success = on_success
        self._on_failure = on_failure
        self._on_retry = on_retry
        self._fail_fast = fail_fast
        self._grace_s = grace_s
        self._rng = random.Random(seed)
        self._confirm = confirm
        self._stopping = asyncio.Event()
        self.stats = DispatchStats()
        self.stop_reason: str | None = None
        self.workers_started = 0
        """Worker coroutines the last :meth:`run` started: ``min(concurrency, rows it was given)``."""

    def stop(self, reason: str) -> None:
        """Stop pulling new rows (idempotent; the first reason is kept)."""
        if self.stop_reason is None:
            self.stop_reason = reason
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    async def run(self, pending: Iterator[Pending]) -> DispatchStats:
        # Each worker starts with a row already pulled, so the worker count is min(concurrency, rows left):
        # --concurrency 1000000 over 15 rows makes 15 coroutines, not 10^6 that would find nothing to do.
        workers: list[asyncio.Task[None]] = []
        try:
            while len(workers) < self._concurrency and not self._stopping.is_set():
                first = next(pending, None)
                if first is None:
                    break
                workers.append(asyncio.create_task(self._worker(pending, first)))
        except BaseException:
            # A bad row while starting: the workers already running must not outlive the error.
            self.stop("internal error")
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        self.workers_started = len(workers)
        watcher = asyncio.create_task(self._cancel_after_grace(workers))
        try:
            outcomes = await asyncio.gather(*workers, return_exceptions=True)
        finally:
            watcher.cancel()
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
                raise outcome
        return self.stats

    async def _cancel_after_grace(self, workers: list[asyncio.Task[None]]) -> None:
        await self._stopping.wait()
        await asyncio.sleep(self._grace_s)
        for worker in workers:
            worker.cancel()

    async def _worker(self, pending: Iterator[Pending], first: Pending) -> None:
        item: Pending | None = first
        while item is not None and not self._stopping.is_set():
            try:
                await self._run_one(item)
            except asyncio.CancelledError:
                self.stats.cancelled += 1
                raise
            except BaseException:
                # A bug or an I/O error while recording (disk full…): stop everyone, then surface it.
                self.stop("internal error")
                raise
            item = next(pending, None)

    async def _run_one(self, item: Pending) -> None:
        row = item.row
        attempts = item.prior_attempts
        budget = max(1, self._policy.max_attempts - item.prior_attempts)
        for used in range(1, budget + 1):
            attempts += 1
            try:
                result = await self._send(row)
            except AttemptFailure as failure:
                if failure.failure_class is FailureClass.UPSTREAM_AUTH:
                    self.stats.cancelled += 1  # not this rollout's fault: left for --resume
                    self.stop(
                        f"a model upstream refused its credentials: {failure.reason} — fix the API key "
                        "in the model server's config and restart the servers"
                    )
                    return
                if failure.transient and used < budget and not self._stopping.is_set():
                    self.stats.retries += 1
                    if self._on_retry is not None:
                        self._on_retry(row, failure, attempts)
                    await self._sleep(self._policy.delay(used, failure, self._rng))
                    if self._stopping.is_set():
                        self.stats.cancelled += 1  # left for --resume, not recorded as a failure
                        return
                    continue
                if failure.transient and not await self._final_failure_stands():
                    self.stats.cancelled += 1  # a dead server or a stop, not this rollout: left for --resume
                    return
                self.stats.failed += 1
                name = failure.failure_class.value
                self.stats.failures_by_class[name] = self.stats.failures_by_class.get(name, 0) + 1
                self._on_failure(row, failure, attempts)
                if self._fail_fast:
                    key = f"{row[keys.TASK_INDEX]}:{row[keys.ROLLOUT_INDEX]}"
                    self.stop(f"fail_fast: rollout {key} failed ({failure})")
                return
            self.stats.succeeded += 1
            self._on_success(row, stamp(result, row, attempts))
            return

    async def _final_failure_stands(self) -> bool:
        """Whether a transient failure that used its last attempt is recorded (see the module docstring)."""
        if self._stopping.is_set():
            return False
        if self._confirm is not None and not await self._confirm():
            return False
        return not self._stopping.is_set()

    async def _sleep(self, seconds: float) -> None:
        # Wake early when stopping, so Ctrl-C is not held up by a long backoff.
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        except TimeoutError:
            return
