"""The supervisor's side of the fork server (:mod:`rewardgym.servers.zygote`).

Contract of :class:`ForkServer` (asyncio):
- :meth:`ForkServer.start` spawns ``python -m rewardgym.servers.zygote <this pid>`` in its own process group,
  its stderr appended to ``log``; it starts importing the server stack at once.
- :meth:`ForkServer.fork` sends one instance (spec + log path) and returns a :class:`ForkedProcess` once the
  zygote has forked it (the first call waits for the zygote's imports). :class:`ForkServerError` when the
  zygote is gone or answers something else — the caller then spawns the instance itself.
- :class:`ForkedProcess` has what the supervisor uses of ``asyncio.subprocess.Process``: ``pid``,
  ``returncode`` (``None`` while running; negative signal number when killed) and ``await wait()``. Exits
  are reported by the zygote, which is the processes' parent. If the zygote's output ends while some are
  still running, they are marked exited with ``-SIGTERM``: they die with it (``PR_SET_PDEATHSIG``).
- :meth:`ForkServer.close` ends the zygote's input (it exits) and waits up to ``grace_s``, then kills it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections import deque
from pathlib import Path

import orjson

from rewardgym.errors import ServerError
from rewardgym.servers.spec import ChildSpec


class ForkServerError(ServerError):
    """The fork server cannot fork (not running, or a reply that is not the expected one)."""


class ForkedProcess:
    """A process forked by the zygote, as the supervisor sees it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._exited = asyncio.Event()

    def exited(self, code: int) -> None:
        if self.returncode is None:
            self.returncode = code
            self._exited.set()

    async def wait(self) -> int:
        await self._exited.wait()
        assert self.returncode is not None
        return self.returncode


class ForkServer:
    """Drives one zygote process; see the module docstring."""

    def __init__(self) -> None:
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._waiting: deque[asyncio.Future[int]] = deque()
        self._forked: dict[int, ForkedProcess] = {}
        self._early_exits: dict[int, int] = {}
        self._lock = asyncio.Lock()

    async def start(self, log: Path) -> None:
        with log.open("ab") as handle:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "rewardgym.servers.zygote",
                str(os.getpid()),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=handle,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                process_group=0,
            )
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        try:
            async for line in self._process.stdout:
                message = orjson.loads(line)
                if "started" in message:
                    if self._waiting:
                        self._waiting.popleft().set_result(int(message["pid"]))
                elif "exited" in message:
                    pid, code = int(message["exited"]), int(message["code"])
                    forked = self._forked.get(pid)
                    if forked is None:
                        self._early_exits[pid] = code  # exited before fork() registered it
                    else:
                        forked.exited(code)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            pass  # a broken protocol: treated as the end of the zygote below
        finally:
            for future in self._waiting:
                if not future.done():
                    future.set_exception(ForkServerError("the fork server stopped"))
            self._waiting.clear()
            for forked in self._forked.values():
                forked.exited(-signal.SIGTERM)

    async def fork(self, spec: ChildSpec, log: Path) -> ForkedProcess:
        """Fork one instance (see the module docstring)."""
        process = self._process
        if process is None or process.stdin is None or self._reader is None or self._reader.done():
            raise ForkServerError("the fork server is not running")
        async with self._lock:
            future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            self._waiting.append(future)
            request = {"spec": spec.model_dump(mode="json"), "log": str(log)}
            try:
                process.stdin.write(orjson.dumps(request) + b"\n")
                await process.stdin.drain()
            except (ConnectionError, RuntimeError) as exc:
                raise ForkServerError(f"the fork server is gone: {exc}") from None
            pid = await future
        forked = ForkedProcess(pid)
        self._forked[pid] = forked
        if pid in self._early_exits:
            forked.exited(self._early_exits.pop(pid))
        return forked

    async def close(self, grace_s: float = 5.0) -> None:
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(ConnectionError, RuntimeError):
                process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), grace_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        self._process = None
