"""Running untrusted solutions: one confined child process per solution, bounded concurrency, full cleanup.

Contract of :class:`CodeSandbox` (one per server; :func:`shared_sandbox` gives one per config and event loop):

- :meth:`CodeSandbox.isolation` probes once (see :mod:`.isolation`) and logs the outcome once per process;
  :meth:`CodeSandbox.ensure_available` raises :class:`SandboxUnavailableError` (with the reason) when there
  is no network isolation and ``require_network_isolation`` is true — code is then never run.
- ``async with sandbox.run(code, fn_name, inputs) as run`` waits for one of ``max_concurrent_executions``
  slots, makes a fresh temporary working folder, and starts :mod:`.sandbox_child` with an environment built
  from scratch (no variable of the server, hence no API key), in a new session (process group).
  ``run.events()`` yields the child's report lines (dicts) until it exits; the ``sandbox`` and
  ``setup_error`` lines are handled here (a setup failure raises :class:`SandboxError`: an infrastructure
  fault, never a reward).
- On leaving the block, whatever happened (done, wrong answer, timeout, cancellation), every process of the
  run is killed: the process group, all descendants (even ones that left the group) and, when a dedicated
  uid was used, every process of that uid. The working folder is then deleted.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import math
import os
import shutil
import signal
import sys
import tempfile
import time
import weakref
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psutil

from rewardgym.environments.code_gen.config import CodeGenConfig
from rewardgym.environments.code_gen.isolation import Isolation, probe_isolation
from rewardgym.environments.code_gen.lcb_execution import INT_MAX_STR_DIGITS
from rewardgym.errors import ServerError

log = logging.getLogger(__name__)

CHILD_SCRIPT = Path(__file__).with_name("sandbox_child.py")
STDERR_TAIL_BYTES = 16_384
_logged: set[str] = set()
_SIGNAL_REASONS = {
    signal.SIGXCPU: "CPU time limit exceeded",
    signal.SIGKILL: "killed (CPU hard limit or out of memory)",
    signal.SIGSEGV: "crashed (segmentation fault)",
}


class SandboxError(ServerError):
    """The sandbox itself failed (could not start or confine the child): no reward can be given."""


class SandboxUnavailableError(SandboxError):
    """Network isolation is unavailable and the config requires it, so no code is run."""


def _log_once(level: int, message: str) -> None:
    if message not in _logged:
        _logged.add(message)
        log.log(level, message)


@contextlib.contextmanager
def big_ints() -> Iterator[None]:
    """Parse and print integers as long as the solutions may (NeMo Gym raises the limit process-wide; this
    raises it only around synchronous work, never across an ``await``)."""
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(max(previous, INT_MAX_STR_DIGITS))
    try:
        yield
    finally:
        sys.set_int_max_str_digits(previous)


def describe_exit(returncode: int | None) -> str:
    """A short reason for how the child ended (``unshare`` reports a signal death as ``128 + signal``)."""
    if returncode is None:
        return "still running"
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if number:
        with contextlib.suppress(ValueError):
            sig = signal.Signals(number)
            return f"{sig.name}: {_SIGNAL_REASONS.get(sig, 'killed by a signal')}"
    return f"exit status {returncode}"


class SandboxRun:
    """One running child: its report lines and how it ended."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.confinement: dict[str, Any] = {}
        self._stderr: collections.deque[bytes] = collections.deque()
        self._stderr_size = 0
        self.started = time.monotonic()
        self.stderr_task = asyncio.ensure_future(self._drain_stderr())

    async def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(4096):
            self._stderr.append(chunk)
            self._stderr_size += len(chunk)
            while self._stderr_size - len(self._stderr[0]) >= STDERR_TAIL_BYTES:
                self._stderr_size -= len(self._stderr.popleft())

    def stderr_tail(self) -> str:
        """The last bytes the child wrote on stderr (for diagnostics; may contain the solution's output)."""
        return b"".join(self._stderr)[-STDERR_TAIL_BYTES:].decode("utf-8", "replace")

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """The report lines after confinement, in order, until the child closes its report channel."""
        assert self.proc.stdout is not None
        while True:
            try:
                line = await self.proc.stdout.readline()
            except ValueError:  # a line over the stream limit: the solution wrote garbage on the channel
                yield {"event": "invalid"}
                return
            if not line.endswith(b"\n"):  # end of the channel (a partial last line means the child died)
                if not self.confinement:
                    await self.proc.wait()
                    ended = describe_exit(self.proc.returncode)
                    raise SandboxError(
                        f"sandbox child ended before confining itself ({ended}): "
                        f"{self.stderr_tail().strip()[-500:]}"
                    )
                return
            try:
                with big_ints():
                    event = json.loads(line)
            except ValueError:
                event = None
            if not isinstance(event, dict):
                yield {"event": "invalid"}
            elif event.get("event") == "setup_error" and not self.confinement:
                raise SandboxError(f"sandbox setup failed: {event.get('error')}")
            elif event.get("event") == "sandbox" and not self.confinement:
                self.confinement = event
            else:
                yield event

    async def exit_reason(self, timeout: float = 5.0) -> str:
        """How the child ended (waits up to ``timeout`` seconds for it to exit)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.proc.wait(), timeout)
        return describe_exit(self.proc.returncode)


class CodeSandbox:
    """Runs solutions in confined child processes (see the module docstring)."""

    def __init__(self, config: CodeGenConfig) -> None:
        self.config = config
        self.python = config.python_executable or sys.executable
        self._isolation: Isolation | None = None
        self._probe_lock = asyncio.Lock()
        self._slots: asyncio.Queue[int] = asyncio.Queue()
        for slot in range(config.max_concurrent_executions):
            self._slots.put_nowait(slot)

    async def isolation(self) -> Isolation:
        """The isolation in use (probed on first call)."""
        async with self._probe_lock:
            if self._isolation is None:
                found = await probe_isolation(self.config.unshare_command, self.python)
                self._isolation = found
                if found.mode == "none":
                    level = logging.ERROR if self.config.require_network_isolation else logging.WARNING
                    action = (
                        "code_gen will refuse to run code"
                        if self.config.require_network_isolation
                        else "code_gen runs code WITH network access (require_network_isolation: false)"
                    )
                    _log_once(level, f"code_gen sandbox: no network isolation ({found.detail}); {action}")
                else:
                    _log_once(logging.INFO, f"code_gen sandbox: {found.mode} isolation via `{found.detail}`")
            return self._isolation

    async def ensure_available(self) -> Isolation:
        """The isolation in use; raises :class:`SandboxUnavailableError` when code must not run."""
        found = await self.isolation()
        if found.mode == "none" and self.config.require_network_isolation:
            raise SandboxUnavailableError(
                "code_gen cannot isolate solutions from the network, so it runs none: "
                f"{found.detail}. Run the server as root or enable unprivileged user namespaces, or set "
                "require_network_isolation: false to run code with network access."
            )
        return found

    def _job(self, code: str, fn_name: str | None, inputs: list[str], workdir: str, uid: int | None) -> bytes:
        cfg = self.config
        budget = (cfg.unit_test_timeout_secs + 1) * max(len(inputs), 1) + 5
        job = {
            "code": code,
            "fn_name": fn_name,
            "inputs": inputs,
            "timeout": cfg.unit_test_timeout_secs,
            "workdir": workdir,
            "uid": uid,
            "private_tmp_mb": cfg.private_tmp_mb if self._isolation and self._isolation.private_tmp else None,
            "limits": {
                "cpu_seconds": math.ceil(budget),
                "memory_bytes": cfg.memory_limit_mb * 2**20,
                "file_size_bytes": cfg.max_file_size_mb * 2**20,
                "processes": cfg.max_processes,
                "output_chars": self.output_chars,
            },
        }
        return json.dumps(job).encode("ascii")

    @property
    def output_chars(self) -> int:
        """Largest report of one test, in characters."""
        return int(self.config.max_output_mb * 2**20)

    def _env(self, workdir: str) -> dict[str, str]:
        threads = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
        return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": workdir, **threads}

    @contextlib.asynccontextmanager
    async def run(self, code: str, fn_name: str | None, inputs: list[str]) -> AsyncIterator[SandboxRun]:
        """Run ``code`` on ``inputs`` in a confined child (see the module docstring)."""
        found = await self.ensure_available()
        slot = await self._slots.get()
        uid = None
        if found.drop_privileges and os.geteuid() == 0 and self.config.sandbox_uid_base is not None:
            uid = self.config.sandbox_uid_base + slot
        workdir = tempfile.mkdtemp(prefix="rewardgym-code-", dir=self.config.work_dir)
        proc: asyncio.subprocess.Process | None = None
        run: SandboxRun | None = None
        try:
            if uid is not None:
                os.chown(workdir, uid, uid)
            proc = await asyncio.create_subprocess_exec(
                *found.prefix,
                self.python,
                "-I",
                "-B",
                str(CHILD_SCRIPT),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=workdir,
                env=self._env(workdir),
                start_new_session=True,
                limit=self.output_chars * 12 + 2**20,
            )
            run = SandboxRun(proc)
            assert proc.stdin is not None
            with contextlib.suppress(ConnectionError):
                proc.stdin.write(self._job(code, fn_name, inputs, workdir, uid))
                await proc.stdin.drain()
                proc.stdin.close()
            yield run
            if self.config.debug:
                log.info("code_gen sandbox %s, stderr tail: %s", run.confinement, run.stderr_tail()[-2000:])
        finally:
            if proc is not None:
                await _kill_all(proc, uid)
            if run is not None:
                await _finish(run)
            shutil.rmtree(workdir, ignore_errors=True)
            self._slots.put_nowait(slot)


async def _kill_all(proc: asyncio.subprocess.Process, uid: int | None) -> None:
    """Kill the child, its process group, every descendant and (dedicated uid) every process of ``uid``."""
    victims: list[psutil.Process] = []
    with contextlib.suppress(psutil.Error):
        victims = psutil.Process(proc.pid).children(recursive=True)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for victim in victims:
        with contextlib.suppress(psutil.Error):
            victim.kill()
    if uid is not None:
        for other in psutil.process_iter(["uids"]):
            with contextlib.suppress(psutil.Error, TypeError):
                if other.info["uids"].real == uid:
                    other.kill()
    await proc.wait()


async def _finish(run: SandboxRun) -> None:
    """Let the stderr reader see EOF (every writer is dead by now), then stop it."""
    with contextlib.suppress(TimeoutError, asyncio.CancelledError):
        await asyncio.wait_for(run.stderr_task, 2.0)


_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, CodeSandbox]] = (
    weakref.WeakKeyDictionary()
)


def shared_sandbox(config: CodeGenConfig) -> CodeSandbox:
    """The sandbox of ``config`` in the running event loop (created on first use)."""
    per_loop = _SHARED.setdefault(asyncio.get_running_loop(), {})
    key = config.model_dump_json()
    if key not in per_loop:
        per_loop[key] = CodeSandbox(config)
    return per_loop[key]
