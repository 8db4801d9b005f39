"""Run blocking functions in killable child processes from asyncio (client of :mod:`.fork_worker`).

Contract of :class:`ForkWorker`:

- On first use it starts one helper process (``python -m ...fork_worker <preload modules>``) and waits for
  its ready line; a helper that cannot import its preload modules raises
  :class:`~rewardgym.errors.ServerError` naming the import error (never silent zero rewards).
- :meth:`ForkWorker.run` sends ``func(*args)`` (``func`` a module-level function, ``args`` and the result
  JSON values) to the helper, which forks one child per job and SIGKILLs it at ``timeout_s``. The event loop
  is never blocked. The outcome is a :class:`KillableResult`: ``value`` on success, else ``failure`` is
  ``"timeout"``, ``"crashed"`` (no result, non-zero exit, or the helper itself died) or ``"error"`` (``func``
  raised; the text is in ``detail``). A helper that dies is restarted on the next call.
- :meth:`ForkWorker.aclose` (or ``async with``) stops the helper; the helper also exits by itself when this
  process goes away (its stdin closes). One worker belongs to one event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal

from rewardgym.errors import ServerError

Failure = Literal["timeout", "crashed", "error"]

WORKER_MODULE = "rewardgym.environments.math_with_judge.fork_worker"
_READ_LIMIT = 16 * 1024 * 1024
_STARTUP_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class KillableResult:
    """What one child run produced."""

    value: Any
    """``func``'s return value (decoded from JSON), or ``None`` on failure."""

    failure: Failure | None
    """``None`` on success, else why the run produced no value."""

    pid: int | None
    """The child's process id (for diagnostics and tests)."""

    detail: str = ""
    """``"<ExcType>: <message>"`` when ``func`` raised; empty otherwise."""


def reference(func: Callable[..., Any]) -> str:
    """``"module:qualname"`` of a module-level function (what the helper imports)."""
    return f"{func.__module__}:{func.__qualname__}"


@dataclass
class _Helper:
    process: asyncio.subprocess.Process
    pid: int
    pending: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    reader: asyncio.Task[None] | None = None


class ForkWorker:
    """A helper process that runs each job in a forked, killable child (see the module docstring)."""

    def __init__(self, preload: Sequence[str] = ()) -> None:
        self.preload = tuple(preload)
        self._helper: _Helper | None = None
        self._lock = asyncio.Lock()
        self._ids = itertools.count()

    async def __aenter__(self) -> ForkWorker:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    @property
    def helper_pid(self) -> int | None:
        """The running helper's process id, if one is running."""
        return self._helper.pid if self._helper is not None else None

    async def _start(self) -> _Helper:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            WORKER_MODULE,
            *self.preload,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=_READ_LIMIT,
        )
        assert process.stdout is not None
        hello: dict[str, Any]
        try:
            line = await asyncio.wait_for(process.stdout.readline(), _STARTUP_TIMEOUT_S)
            hello = json.loads(line) if line else {"ready": False, "detail": "exited during start-up"}
        except (TimeoutError, ValueError) as exc:
            hello = {"ready": False, "detail": f"{type(exc).__name__}: {exc}"}
        if not hello.get("ready"):
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            raise ServerError(
                f"killable worker failed to start ({', '.join(self.preload)}): {hello.get('detail')}"
            )
        helper = _Helper(process, int(hello["pid"]))
        helper.reader = asyncio.create_task(self._read(helper))
        return helper

    async def _read(self, helper: _Helper) -> None:
        assert helper.process.stdout is not None
        try:
            while line := await helper.process.stdout.readline():
                message = json.loads(line)
                future = helper.pending.pop(message.get("id"), None)
                if future is not None and not future.done():
                    future.set_result(message)
        except (ValueError, asyncio.LimitOverrunError):
            with contextlib.suppress(ProcessLookupError):
                helper.process.kill()
        finally:
            for future in helper.pending.values():
                if not future.done():
                    future.set_result({"failure": "crashed", "detail": "worker process ended"})
            helper.pending.clear()

    async def _running(self) -> _Helper:
        async with self._lock:
            helper = self._helper
            if (
                helper is None
                or helper.process.returncode is not None
                or helper.reader is None
                or helper.reader.done()
            ):
                if helper is not None:
                    await self._stop(helper)
                helper = self._helper = await self._start()
            return helper

    async def run(
        self, func: Callable[..., Any], args: Sequence[Any] = (), *, timeout_s: float
    ) -> KillableResult:
        """Run ``func(*args)`` in a killable child; see the module docstring."""
        helper = await self._running()
        job_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        helper.pending[job_id] = future
        request = {"id": job_id, "func": reference(func), "args": list(args), "timeout_s": timeout_s}
        assert helper.process.stdin is not None
        try:
            helper.process.stdin.write(json.dumps(request).encode() + b"\n")
            await helper.process.stdin.drain()
            # The helper enforces timeout_s; the margin only guards against a wedged helper.
            message = await asyncio.wait_for(future, timeout_s + 30.0)
        except (BrokenPipeError, ConnectionResetError):
            return KillableResult(None, "crashed", None, "worker process ended")
        except TimeoutError:
            async with self._lock:
                await self._stop(helper)
            return KillableResult(None, "timeout", None, "worker process unresponsive")
        finally:
            helper.pending.pop(job_id, None)
        failure = message.get("failure")
        return KillableResult(
            message.get("value"), failure, message.get("pid"), str(message.get("detail") or "")
        )

    async def _stop(self, helper: _Helper) -> None:
        if helper.process.returncode is None:
            if helper.process.stdin is not None:
                helper.process.stdin.close()
            try:
                await asyncio.wait_for(helper.process.wait(), 5.0)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    helper.process.kill()
                await helper.process.wait()
        if helper.reader is not None:
            await asyncio.gather(helper.reader, return_exceptions=True)
        if self._helper is helper:
            self._helper = None

    async def aclose(self) -> None:
        """Stop the helper process (pending jobs report ``crashed``)."""
        async with self._lock:
            if self._helper is not None:
                await self._stop(self._helper)
