"""Running untrusted solutions: one confined child process per solution, bounded concurrency, full cleanup.

Contract of :class:`CodeSandbox` (one per server; :func:`shared_sandbox` gives one per config and event loop):

- :meth:`CodeSandbox.isolation` probes once (see :mod:`.isolation`), then runs one fully confined child that
  checks from inside that the confinement holds (only ``lo``, only its own processes in ``/proc``, no host
  file, a read-only root, no user namespace); a failure downgrades the isolation to ``none`` with the
  reason. The outcome is logged once per process. :meth:`CodeSandbox.ensure_available` raises
  :class:`SandboxUnavailableError` (with the reason) when there is no isolation and
  ``require_network_isolation`` is true — code is then never run.
- A run's memory is bounded as a whole (:mod:`.run_memory`: a cgroup per run, else ``RLIMIT_NPROC ×
  RLIMIT_AS`` within ``memory_limit_mb``); where neither holds the isolation counts as failed.
- ``async with sandbox.run(code, fn_name, inputs) as run`` waits for one of ``max_concurrent_executions``
  slots and starts :mod:`.sandbox_child` with an environment built from scratch (no variable of the server,
  hence no API key), in a new session (process group). With isolation the child's work folder is on its
  private tmpfs (:mod:`.sandbox_root`); without, a fresh host temporary folder is made and deleted after.
  ``run.events()`` yields the child's report lines (dicts) until it exits; the ``sandbox`` and
  ``setup_error`` lines are handled here (a setup failure raises :class:`SandboxError`: an infrastructure
  fault, never a reward).
- Every byte the child sends back is counted in the reader before it is kept (chunks of 64 KiB): a report
  line over ``max_output_mb`` + 64 KiB or more than ``max_output_mb`` on stderr kills the run, and
  ``events()`` ends with ``{"event": "overflow", "reason": "Output limit: …"}``. The server thus holds at
  most one report line of one run at a time, whatever the solution writes.
- On leaving the block, whatever happened (done, wrong answer, timeout, overflow, cancellation), every
  process of the run is killed: the process group, all descendants (even ones that left the group) and,
  when a dedicated uid was used, every process of that uid (the pid namespace's end kills the rest) — and
  the slot is given back. A cancellation that arrives during that clean-up waits for its end (it is raised
  once everything is gone), so no slot, uid claim or folder is ever lost to an impatient caller.
- A self-test that does not end (cancelled) leaves the isolation unverified: the next call probes again.

A running child's reader is :class:`~.sandbox_run.SandboxRun` (:mod:`.sandbox_run`, re-exported here).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import shutil
import signal
import sys
import tempfile
import weakref
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any

import psutil

from rewardgym.environments.code_gen.config import CodeGenConfig
from rewardgym.environments.code_gen.isolation import PROBE_TIMEOUT_S, Isolation, probe_isolation
from rewardgym.environments.code_gen.run_memory import (
    MemoryPlan,
    MemoryUnbounded,
    make_run_cgroup,
    plan_memory,
    remove_run_cgroup,
)
from rewardgym.environments.code_gen.sandbox_run import (
    READ_CHUNK,
    SandboxError,
    SandboxRun,
    SandboxUnavailableError,
    big_ints,
    describe_exit,
)
from rewardgym.environments.code_gen.uid_claim import claim_uid, release_uid

__all__ = [
    "CodeSandbox",
    "SandboxError",
    "SandboxRun",
    "SandboxUnavailableError",
    "big_ints",
    "describe_exit",
    "shared_sandbox",
]

log = logging.getLogger(__name__)

CHILD_SCRIPT = Path(__file__).with_name("sandbox_child.py")
REPORT_SLACK_BYTES = 65_536
TMP_INODES_PER_MB = 256
"""Room for the fields around a test's output (index, status, seconds …) in one report line."""
SANDBOX_WORKDIR = "/tmp/work"
"""The work folder inside the private root (on its tmpfs)."""
_logged: set[str] = set()


def _log_once(level: int, message: str) -> None:
    if message not in _logged:
        _logged.add(message)
        log.log(level, message)


class CodeSandbox:
    """Runs solutions in confined child processes (see the module docstring)."""

    def __init__(self, config: CodeGenConfig) -> None:
        self.config = config
        self.python = config.python_executable or sys.executable
        self._isolation: Isolation | None = None
        self.memory = MemoryPlan("rlimits", 0, 1, 0)
        """How each run's memory is bounded (set with the isolation, :meth:`_plan_memory`)."""
        self._probe_lock = asyncio.Lock()
        self._slots: asyncio.Queue[int] = asyncio.Queue()
        for slot in range(config.max_concurrent_executions):
            self._slots.put_nowait(slot)

    async def isolation(self) -> Isolation:
        """The isolation in use (probed, then self-tested through a real confined child, on first call)."""
        async with self._probe_lock:
            if self._isolation is None:
                found = await probe_isolation(self.config.unshare_command, self.python)
                if found.mode != "none":
                    self._isolation = found  # what the self-test's own run is launched with
                    try:
                        failure = self._plan_memory() or await self._self_test()
                    except BaseException:
                        self._isolation = None  # not verified (e.g. cancelled): the next call tests again
                        raise
                    if failure:
                        found = Isolation("none", (), False, f"`{found.detail}` works, but {failure}")
                self._isolation = found
                self._plan_memory()
                if found.mode == "none":
                    level = logging.ERROR if self.config.require_network_isolation else logging.WARNING
                    action = (
                        "code_gen will refuse to run code"
                        if self.config.require_network_isolation
                        else "code_gen runs code WITH network access (require_network_isolation: false)"
                    )
                    _log_once(level, f"code_gen sandbox: no isolation ({found.detail}); {action}")
                else:
                    _log_once(logging.INFO, f"code_gen sandbox: {found.mode} isolation via `{found.detail}`")
            return self._isolation

    def _plan_memory(self) -> str | None:
        """How a run's memory is bounded under the isolation found (:mod:`.run_memory`); why it cannot be.
        Without any isolation, explicitly allowed, the rlimits stay as they were: nothing is promised."""
        found = self._isolation
        assert found is not None
        nproc = os.geteuid() != 0 or (found.drop_privileges and self.config.sandbox_uid_base is not None)
        try:
            self.memory = plan_memory(self.config, nproc_applies=nproc)
        except MemoryUnbounded as exc:
            mib = self.config.memory_limit_mb * 2**20
            self.memory = MemoryPlan("rlimits", mib, self.config.max_processes, mib)
            return str(exc)
        return None

    async def _self_test(self) -> str | None:
        """Why the confinement does not hold here (``None`` when it does): one real child, fully confined,
        checks from inside what a solution could reach (network, processes, host files, writable root, user
        namespaces)."""
        try:
            async with asyncio.timeout(PROBE_TIMEOUT_S), self._launch(None, None, [], self_test=True) as run:
                async for event in run.events():
                    if event.get("event") == "self_test":
                        failures = event.get("failures")
                        return f"the confinement self-test failed: {failures}" if failures else None
                return f"the confinement self-test did not report ({await run.exit_reason()})"
        except SandboxError as exc:
            return f"the confinement self-test failed: {exc}"
        except TimeoutError:
            return f"the confinement self-test did not answer within {PROBE_TIMEOUT_S:g} s"

    async def ensure_available(self) -> Isolation:
        """The isolation in use; raises :class:`SandboxUnavailableError` when code must not run."""
        found = await self.isolation()
        if found.mode == "none" and self.config.require_network_isolation:
            raise SandboxUnavailableError(
                "code_gen cannot isolate solutions from the host, so it runs none: "
                f"{found.detail}. Run the server as root or enable unprivileged user namespaces, or set "
                "require_network_isolation: false to run code without isolation."
            )
        return found

    def _job(
        self, code: str | None, fn_name: str | None, inputs: list[str], workdir: str, uid: int | None
    ) -> dict[str, Any]:
        cfg = self.config
        budget = (cfg.unit_test_timeout_secs + 1) * max(len(inputs), 1) + 5
        private = self._isolation is not None and self._isolation.private_root
        return {
            "code": code,
            "fn_name": fn_name,
            "inputs": inputs,
            "timeout": cfg.unit_test_timeout_secs,
            "workdir": workdir,
            "uid": uid,
            "root": {"tmp_mb": cfg.private_tmp_mb, "tmp_inodes": self.tmp_inodes} if private else None,
            "limits": {
                "cpu_seconds": math.ceil(budget),
                "memory_bytes": self.memory.process_bytes,
                "file_size_bytes": cfg.max_file_size_mb * 2**20,
                "processes": self.memory.processes,
                "output_chars": self.output_bytes,
                "report_bytes": self.output_bytes,
            },
        }

    @property
    def output_bytes(self) -> int:
        """Largest report of one test, in bytes (also the cap on the child's stderr)."""
        return int(self.config.max_output_mb * 2**20)

    @property
    def tmp_inodes(self) -> int:
        """Files and folders the private tmpfs may hold (bounds a flood of empty files)."""
        return max(1024, self.config.private_tmp_mb * TMP_INODES_PER_MB)

    def _env(self, workdir: str) -> dict[str, str]:
        threads = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
        return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": workdir, **threads}

    @contextlib.asynccontextmanager
    async def run(self, code: str, fn_name: str | None, inputs: list[str]) -> AsyncIterator[SandboxRun]:
        """Run ``code`` on ``inputs`` in a confined child (see the module docstring)."""
        await self.ensure_available()
        async with self._launch(code, fn_name, inputs) as run:
            yield run

    @contextlib.asynccontextmanager
    async def _launch(
        self, code: str | None, fn_name: str | None, inputs: list[str], self_test: bool = False
    ) -> AsyncIterator[SandboxRun]:
        found = self._isolation
        assert found is not None
        slot = await self._slots.get()
        uid = None
        claim: int | None = None
        if found.drop_privileges and os.geteuid() == 0 and self.config.sandbox_uid_base is not None:
            # A uid no other server on the machine is using now (its process limit and clean-up are ours).
            uid, claim = claim_uid(self.config.sandbox_uid_base, slot)
        # With a private root the work folder lives on the sandbox's own tmpfs: nothing is made on the host.
        host_dir = (
            None
            if found.private_root
            else tempfile.mkdtemp(prefix="rewardgym-code-", dir=self.config.work_dir)
        )
        workdir = host_dir or SANDBOX_WORKDIR
        proc: asyncio.subprocess.Process | None = None
        run: SandboxRun | None = None
        cgroup: str | None = None
        try:
            if uid is not None and host_dir is not None:
                os.chown(host_dir, uid, uid)
            proc = await asyncio.create_subprocess_exec(
                *found.prefix,
                self.python,
                "-I",
                "-B",
                str(CHILD_SCRIPT),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=host_dir or "/",
                env=self._env(workdir),
                start_new_session=True,
                limit=READ_CHUNK,
            )
            run = SandboxRun(proc, self.output_bytes + REPORT_SLACK_BYTES, self.output_bytes)
            cgroup = make_run_cgroup(self.config, self.memory, slot)
            job = self._job(code, fn_name, inputs, workdir, uid) | {"self_test": self_test, "cgroup": cgroup}
            assert proc.stdin is not None
            with contextlib.suppress(ConnectionError):
                proc.stdin.write(json.dumps(job).encode("ascii"))
                await proc.stdin.drain()
                proc.stdin.close()
            yield run
            if self.config.debug:
                log.info("code_gen sandbox %s, stderr tail: %s", run.confinement, run.stderr_tail()[-2000:])
        finally:
            # Run to its end even if this task is cancelled meanwhile (a verify whose caller went away):
            # a clean-up cut short at an await would keep the slot for ever, and the server would stall
            # once every slot was lost.
            await _to_the_end(self._clean_up(slot, proc, uid, claim, cgroup, run, host_dir))

    async def _clean_up(
        self,
        slot: int,
        proc: asyncio.subprocess.Process | None,
        uid: int | None,
        claim: int | None,
        cgroup: str | None,
        run: SandboxRun | None,
        host_dir: str | None,
    ) -> None:
        try:
            if proc is not None:
                await _kill_all(proc, uid)
            remove_run_cgroup(cgroup)
            if run is not None:
                await _finish(run)
            if host_dir is not None:
                shutil.rmtree(host_dir, ignore_errors=True)
            if claim is not None:
                release_uid(claim)  # after the uid-wide kill: nothing of this run is left under it
        finally:
            self._slots.put_nowait(slot)


async def _to_the_end(work: Coroutine[Any, Any, None]) -> None:
    """Await ``work`` in its own task until it has ended; a cancellation of the caller meanwhile is raised
    once it has (``asyncio.shield`` alone would let the caller go on while the work still runs)."""
    task = asyncio.ensure_future(work)
    cancelled: asyncio.CancelledError | None = None
    while True:
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError as exc:
            if task.done():  # the work itself was cancelled (the loop is closing): nothing to wait for
                raise
            cancelled = exc
            continue
        break
    if cancelled is not None:
        raise cancelled


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
