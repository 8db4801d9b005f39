"""Process supervision: launch every server instance as a child process, watch it, stop it.

Contract of :class:`Supervisor` (asyncio; used by ``gym env start``):
- :meth:`Supervisor.start`: checks every port first (a port in use is a :class:`ServerError` before anything
  is launched); launches each :class:`~rewardgym.launch.child_spec.ChildSpec` in its own process group,
  stdout+stderr to a fresh ``<log_dir>/<name>.log``: forked by the fork server (:mod:`.zygote` via
  :mod:`.forking`; it imports the server stack once for all instances, its own log is
  ``<log_dir>/_fork_server.log``) or — with ``fork_server=False``, or if the fork server fails — spawned as
  ``python -m rewardgym.launch.child`` with the spec on stdin; serves the head registry
  (:mod:`rewardgym.launch.registry_server`) in this process; then waits until every child answers
  ``GET /`` (any HTTP status) and every upstream answers (``GET <base>/models`` for a ``…/v1`` base URL,
  else ``GET <base>``), polling with deadlines. A child that exits, a deadline passed, or an unresolvable
  upstream host stops everything and raises :class:`ChildFailure`/:class:`ServerError` carrying the last
  30 lines of the child's log.
- ``preflight`` (e.g. validating every config with :func:`~rewardgym.launch.from_config.validate_specs`)
  runs when a child exits during start-up, before that failure is reported: if it raises, its error is
  reported instead
  (an invalid config is one clear error, not a log tail). Each child validates its own config before it
  listens, so when all of them come up the configs are valid — and the supervisor never imports the server
  classes (FastAPI, environments, models) while the children boot on the same cores.
- :meth:`Supervisor.wait`: returns when :meth:`request_stop` is called (signal handlers call it); raises
  :class:`ChildFailure` (after stopping the others) if a child exits on its own — unless it is one replica
  of an instance whose other replicas still run: then its record says ``exited`` and the others serve on
  (their clients stop sending to it, :mod:`rewardgym.http.balancer`).
- :meth:`Supervisor.stop`: SIGTERM to each child's process group, up to ``stop_grace_s`` to exit, then
  SIGKILL; then the fork server and the head stop. Children also die if the supervisor is SIGKILLed: they
  ask the kernel for ``PR_SET_PDEATHSIG`` at start-up (see :mod:`rewardgym.launch.child`; forked ones
  through the fork server, which dies with the supervisor).
- Secrets travel only through pipes (the children's or the fork server's stdin): never on a command line
  (``/proc/<pid>/cmdline`` is readable by every user), and the children's environment is this process's
  minus ``REWARDGYM_MODEL_API_KEY`` (:func:`~rewardgym.config.secrets.child_environ`). The instance records
  served by the head hold no secret.
- Start-up probes use the standard library (:mod:`rewardgym.launch.probe`), not aiohttp.
- Colocated instances (``colocate: true``, :mod:`.colocate`) share one child: the first of them is spawned
  with the others as its ``companions``; each keeps its record (same pid), port, readiness probe and log
  tail, and the process exiting is each of them exiting. With ``host_colocated`` (a serving ``gym eval run``)
  the group is served by this process itself (:class:`~rewardgym.launch.colocate.HostedHere`): stopping it
  stops those servers, never signals this process's group.
- Its options and its error type live in :mod:`.supervisor_options` (re-exported here).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rewardgym.config.secrets import child_environ
from rewardgym.errors import ServerError
from rewardgym.http.errors import UpstreamConnectionError, UpstreamError, safe_url
from rewardgym.launch.child_spec import ChildSpec, InstanceRecord, model_identity
from rewardgym.launch.embedded_head import EmbeddedHead
from rewardgym.launch.forking import ForkedProcess, ForkServer, ForkServerError, discard_prestarted
from rewardgym.launch.logtail import tail_log
from rewardgym.launch.probe import http_status, listening
from rewardgym.launch.supervisor_options import ChildFailure, SupervisorOptions, all_or_first_error
from rewardgym.servers.logs import log_path

if TYPE_CHECKING:
    from rewardgym.launch.colocate import HostedHere

__all__ = ["ChildFailure", "Supervisor", "SupervisorOptions", "all_or_first_error"]

FORK_SERVER_LOG = "_fork_server.log"
POLL_INTERVAL_S = 0.02
UPSTREAM_POLL_S = 0.5


@dataclass
class _Child:
    spec: ChildSpec
    record: InstanceRecord
    log: Path
    process: asyncio.subprocess.Process | ForkedProcess | HostedHere | None = None
    host: _Child | None = None
    """The child whose process serves this one too (colocated instances, :mod:`.colocate`)."""
    here: bool = False
    """This child's group is served by the supervisor's own process (:class:`HostedHere`)."""


class Supervisor:
    """See the module docstring."""

    colocates: ClassVar[bool] = True
    """Whether this launcher serves colocated instances together (the Ray launcher places each alone)."""

    def __init__(
        self,
        specs: Sequence[ChildSpec],
        options: SupervisorOptions,
        *,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        self.options = options
        self._notify = notify or (lambda _msg: None)
        self._children = [
            _Child(
                spec=spec,
                record=InstanceRecord(
                    name=spec.name,
                    kind=spec.kind,
                    implementation=spec.implementation,
                    url=spec.url,
                    model=model_identity(spec),
                ),
                log=log_path(options.log_dir / spec.log_subdir, spec.name),
            )
            for spec in specs
        ]
        for child in self._children:
            child.record.replica = child.spec.replica
            child.record.replicas = child.spec.replicas
        self._group_colocated()
        self._stop_requested = asyncio.Event()
        self._head = EmbeddedHead(options)
        self._forks: ForkServer | None = None
        self.head_url = f"http://{options.head_host}:{options.head_port}"
        self.waiting_for: set[str] = set()
        """Upstreams the start-up still waits for (the head's /health says so: the stack is not ready)."""

    def _group_colocated(self) -> None:
        """One process for the colocated instances: the first hosts the others (its spec lists them) — in a
        child, or in this process with ``host_colocated``."""
        group = [child for child in self._children if child.spec.colocate and self.colocates]
        if len(group) < (1 if self.options.host_colocated else 2):
            return
        first, others = group[0], group[1:]
        first.spec = first.spec.model_copy(update={"companions": [child.spec for child in others]})
        first.here = self.options.host_colocated
        for child in others:
            child.host = first
            child.log = first.log  # one process, one stdout: its tail is every member's

    def records(self) -> list[InstanceRecord]:
        return [child.record for child in self._children]

    def request_stop(self) -> None:
        self._stop_requested.set()

    # ----------------------------------------------------------------- start
    async def start(self, preflight: Callable[[], Any] | None = None) -> None:
        """Launch all children and the head, and wait until all answer (module docstring).

        ``preflight`` (e.g. validating every config) runs if a child exits during start-up; if it raises,
        everything is stopped and its error propagates instead of the child's failure.
        """
        self._check_ports()
        self.options.log_dir.mkdir(parents=True, exist_ok=True)
        forked = [c for c in self._children if c.host is None and not c.here]
        if not forked:
            discard_prestarted()  # every server is hosted here: no zygote to adopt
        try:
            if self.options.fork_server and forked:
                self._forks = ForkServer()  # starts importing the server stack while the head starts
                await self._forks.start(self.options.log_dir / FORK_SERVER_LOG)
                await self._start_head()
                for child in self._children:
                    await self._spawn(child)
            else:
                for child in self._children:
                    await self._spawn(child)
                await self._start_head()
            await self._wait_all_ready([self._wait_ready(child) for child in self._children], preflight)
        except BaseException:
            await self.stop()
            raise

    async def _wait_all_ready(
        self, servers: list[Coroutine[Any, Any, None]], preflight: Callable[[], Any] | None
    ) -> None:
        """Wait for every server (``servers``) and every upstream; on a child's death, ``preflight`` first."""
        try:
            await all_or_first_error(
                [*servers, *(self._wait_upstream(url) for url in self.options.upstreams)]
            )
        except ChildFailure:
            if preflight is not None:
                preflight()
            raise

    def _check_ports(self) -> None:
        from rewardgym.launch.binding import check_bind
        from rewardgym.launch.serve import check_port_free

        options = self.options
        check_bind(
            "head_server", options.head_host, network_bind=options.network_bind, token=options.auth_token
        )
        seen: dict[tuple[str, int], str] = {}
        endpoints = [("head server", self.options.head_host, self.options.head_port)]
        endpoints += [(c.spec.name, c.spec.host, c.spec.port) for c in self._children]
        for name, host, port in endpoints:
            if port and (host, port) in seen:
                raise ServerError(f"{name} and {seen[(host, port)]} are both configured on {host}:{port}")
            seen[(host, port)] = name
            try:
                check_port_free(host, port)
            except ServerError as exc:
                raise ServerError(f"{name}: {exc}") from None

    async def _start_head(self) -> None:
        specs = [child.spec for child in self._children]
        await self._head.start(self.records, specs, lambda: sorted(self.waiting_for))

    async def _spawn(self, child: _Child) -> None:
        child.record.started_at = time.time()
        if child.host is not None:  # served by its host's process, spawned just before
            child.process = child.host.process
            child.record.pid = child.host.record.pid
            return
        if child.here:
            from rewardgym.launch.colocate import HostedHere

            child.log.write_bytes(b"")
            hosted = HostedHere([child.spec, *child.spec.companions], child.log)
            child.process = hosted
            child.record.pid = hosted.pid
            await hosted.start()
            return
        child.log.parent.mkdir(parents=True, exist_ok=True)
        if self._forks is not None:
            child.log.write_bytes(b"")  # a fresh log per start: its tail is about this run
            try:
                child.process = await self._forks.fork(child.spec, child.log)
                child.record.pid = child.process.pid
                return
            except ForkServerError:
                forks, self._forks = self._forks, None
                await forks.close()
        spec = child.spec.model_copy(update={"parent_pid": os.getpid()})
        env = child_environ(PYTHONUNBUFFERED="1")
        with child.log.open("wb") as log:  # a fresh log per start: its tail is about this run
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "rewardgym.launch.child",
                stdin=asyncio.subprocess.PIPE,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                env=env,
                process_group=0,
            )
        assert process.stdin is not None
        process.stdin.write(spec.model_dump_json().encode())
        await process.stdin.drain()
        process.stdin.close()
        child.process = process
        child.record.pid = process.pid

    def _fail(self, child: _Child, reason: str) -> ChildFailure:
        name = child.spec.name
        if child.spec.replicas > 1:
            name = f"{name}#{child.spec.replica}"
        return ChildFailure(name, reason, tail_log(child.log))

    def _others_alive(self, child: _Child) -> bool:
        """Whether another replica of ``child``'s instance still runs."""
        return any(
            other is not child
            and other.spec.name == child.spec.name
            and other.process is not None
            and other.process.returncode is None
            for other in self._children
        )

    async def _wait_ready(self, child: _Child) -> None:
        deadline = time.monotonic() + self.options.ready_timeout_s
        assert child.process is not None
        while True:
            if child.process.returncode is not None:
                child.record.status = "exited"
                child.record.exit_code = child.process.returncode
                raise self._fail(child, f"exited during start-up (exit code {child.process.returncode})")
            try:
                if not await listening(child.spec.host, child.spec.port):
                    raise UpstreamConnectionError(child.spec.url, "not listening yet")
                await http_status(f"{child.spec.url}/", 2.0)
            except UpstreamError:
                if time.monotonic() > deadline:
                    raise self._fail(
                        child, f"did not answer within {self.options.ready_timeout_s:g} s"
                    ) from None
                await asyncio.sleep(POLL_INTERVAL_S)
                continue
            child.record.status = "ready"
            self._notify(f"{child.spec.name} ready at {child.spec.url}")
            return

    async def _wait_upstream(self, base_url: str) -> None:
        base = base_url.rstrip("/")
        probe = f"{base}/models" if base.endswith("/v1") else base
        deadline = time.monotonic() + self.options.upstream_timeout_s
        self.waiting_for.add(safe_url(base))
        while True:
            try:
                await http_status(probe, 5.0)
                self._notify(f"upstream {safe_url(base)} answers")
                self.waiting_for.discard(safe_url(base))
                return
            except UpstreamConnectionError as exc:
                if exc.dns_failure:
                    raise ServerError(
                        f"model endpoint {safe_url(base)}: cannot resolve its host name"
                    ) from None
                failure: UpstreamError = exc
            except UpstreamError as exc:
                failure = exc
            if time.monotonic() > deadline:
                raise ServerError(
                    f"model endpoint {safe_url(base)} did not answer within "
                    f"{self.options.upstream_timeout_s:g} s ({failure.kind})"
                )
            await asyncio.sleep(UPSTREAM_POLL_S)

    # ----------------------------------------------------------------- run and stop
    async def wait(self) -> None:
        """Until a stop is requested (returns) or a child exits on its own (raises :class:`ChildFailure`)."""
        waits: dict[asyncio.Task[int], _Child] = {
            asyncio.create_task(child.process.wait()): child
            for child in self._children
            if child.process and child.record.status != "exited"
        }
        stop = asyncio.create_task(self._stop_requested.wait())
        try:
            while True:
                done, _ = await asyncio.wait([stop, *waits], return_when=asyncio.FIRST_COMPLETED)
                exited = [waits.pop(task) for task in done if task in waits]
                if not exited or self._stop_requested.is_set():
                    return
                for child in exited:
                    child.record.status = "exited"
                    child.record.exit_code = child.process.returncode if child.process else None
                    failure = self._fail(child, f"exited unexpectedly (exit code {child.record.exit_code})")
                    if not self._others_alive(child):
                        await self.stop()
                        raise failure
                    self._notify(
                        str(failure).split("; last log lines", 1)[0] + "; its other replicas serve on"
                    )
        finally:
            for task in [stop, *waits]:
                task.cancel()

    def _signal_group(self, child: _Child, sig: signal.Signals, *, exited_too: bool = False) -> None:
        if child.process is None or (child.process.returncode is not None and not exited_too):
            return
        if child.here:  # this very process (HostedHere): never a signal to our own process group
            assert not isinstance(child.process, asyncio.subprocess.Process | ForkedProcess)
            if sig == signal.SIGTERM:
                child.process.terminate()
            else:
                child.process.kill()
            return
        if child.host is not None and child.host.here:
            return  # stopped with its host
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.process.pid, sig)

    async def stop(self) -> None:
        """Stop all children (SIGTERM, grace period, SIGKILL) and the head server."""
        self._head.forget()
        running = [c for c in self._children if c.process is not None and c.process.returncode is None]
        for child in running:
            child.record.status = "stopping"
            self._signal_group(child, signal.SIGTERM)
        if running:
            waits = [asyncio.create_task(c.process.wait()) for c in running if c.process]
            _, pending = await asyncio.wait(waits, timeout=self.options.stop_grace_s)
            for task in pending:
                task.cancel()
            for child in running:  # stragglers, and anything left in the children's process groups
                self._signal_group(child, signal.SIGKILL, exited_too=True)
            await asyncio.gather(*(c.process.wait() for c in running if c.process))
        for child in self._children:
            if child.process is not None:
                child.record.exit_code = child.process.returncode
                child.record.status = "stopped" if child.record.status != "exited" else "exited"
        if self._forks is not None:
            await self._forks.close(self.options.stop_grace_s)
            self._forks = None
        await self._head.stop()
