"""The supervisor's side of the fork server (:mod:`rewardgym.launch.zygote`).

Contract of :class:`ForkServer` (asyncio):
- :meth:`ForkServer.start` spawns ``python -m rewardgym.launch.zygote <this pid>`` in its own process group,
  its stderr appended to ``log``; it starts importing the server stack at once. If :func:`prestart` ran
  earlier in this process (``gym env start`` calls it first thing, before loading the config), that zygote
  is adopted instead: its imports overlap with the command's own start-up.
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
import subprocess
import sys
from collections import deque
from pathlib import Path
from typing import IO

import orjson

from rewardgym.config.secrets import child_environ
from rewardgym.errors import ServerError
from rewardgym.launch.child_spec import ChildSpec


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


_prestarted: list[subprocess.Popen[bytes]] = []  # at most one zygote waiting to be adopted


def _spawn_zygote(stderr: IO[bytes] | int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "rewardgym.launch.zygote", str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=child_environ(PYTHONUNBUFFERED="1"),  # forked servers inherit it: no gym-only secret in it
        process_group=0,
    )


def prestart() -> None:
    """Start a zygote now (no event loop needed) for the next :meth:`ForkServer.start` in this process."""
    if not _prestarted:
        _prestarted.append(_spawn_zygote(subprocess.DEVNULL))


def discard_prestarted() -> None:
    """Stop a prestarted zygote nobody will adopt (every server is hosted in this process)."""
    while _prestarted:
        zygote = _prestarted.pop()
        zygote.kill()
        zygote.wait()


def _adopt_prestarted() -> subprocess.Popen[bytes] | None:
    zygote = _prestarted.pop() if _prestarted else None
    if zygote is not None and zygote.poll() is not None:
        return None
    if zygote is not None and child_environ() != child_environ(drop_secret_values=False):
        # Started before the config was read, it inherited a variable the config then read as a secret
        # (``${oc.env:…}``): every server it forked would carry it in /proc/<pid>/environ. A fresh one
        # gets the environment without it.
        zygote.kill()
        zygote.wait()
        return None
    return zygote


class ForkServer:
    """Drives one zygote process; see the module docstring."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self._reader: asyncio.Task[None] | None = None
        self._waiting: deque[asyncio.Future[int]] = deque()
        self._forked: dict[int, ForkedProcess] = {}
        self._early_exits: dict[int, int] = {}
        self._lock = asyncio.Lock()

    async def start(self, log: Path) -> None:
        process = _adopt_prestarted()
        adopted = process is not None
        if process is None:
            with log.open("ab") as handle:
                process = _spawn_zygote(handle)
        assert process.stdin is not None and process.stdout is not None
        loop = asyncio.get_running_loop()
        stdout = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdout), process.stdout)
        self._stdin, _ = await loop.connect_write_pipe(asyncio.Protocol, process.stdin)
        if adopted:
            self._stdin.write(orjson.dumps({"stderr": str(log)}) + b"\n")
        self._process = process
        self._reader = asyncio.create_task(self._read(stdout))

    async def _read(self, stdout: asyncio.StreamReader) -> None:
        try:
            async for line in stdout:
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
        stdin = self._stdin
        if stdin is None or stdin.is_closing() or self._reader is None or self._reader.done():
            raise ForkServerError("the fork server is not running")
        async with self._lock:
            future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            self._waiting.append(future)
            request = {"spec": spec.model_dump(mode="json"), "log": str(log)}
            stdin.write(orjson.dumps(request) + b"\n")
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
        if self._stdin is not None:
            self._stdin.close()  # end of input: the zygote exits
        try:
            await asyncio.to_thread(process.wait, grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await asyncio.to_thread(process.wait)
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        self._process = None
