"""Colocated servers: several server instances of one stack served by one process, calling each other
without a socket.

``colocate: true`` (a run-wide config key, off by default) asks ``gym env start`` (and ``gym eval run`` when
it starts the servers) to serve every instance that has one replica and no ``ray:`` block from one process.
Each still listens on its own port — the collector, ``curl`` and other stacks reach it over HTTP as before —
but a call from one of them to another (an agent's ``/seed_session``, ``/v1/responses``, ``/verify``) goes
through :mod:`rewardgym.http.local`: the same ASGI request and reply, no loopback socket, no second event
loop. At 10^3 rollouts/s against an instant upstream that removes three of a rollout's five HTTP hops and
about half of the stack's CPU (docs/collect.md, Performance).

What it costs (why it is not the default): the colocated servers share one core and one failure domain — an
environment whose verifier is CPU-heavy slows the agent loop of every rollout, and a crash of one stops the
others (the supervisor then stops the stack, as for any server that dies). Keep it off for code-executing or
heavy environments and for instances with replicas.

Contract:
- The switch is read by :func:`rewardgym.config.colocation.colocated` (``true``/``false``; anything else
  is a :class:`~rewardgym.errors.ConfigError` naming the key); :mod:`.from_config` marks the eligible
  specs and the supervisor hands one process the group (:attr:`ChildSpec.companions`).
- :func:`serve_together` runs built servers in this process until SIGINT/SIGTERM: each on its own uvicorn
  server and port (all on one event loop, signals handled once for all), each registered for in-process
  calls; graceful shutdown as for one server; a server that cannot start stops the others (exit code 1).
  ``gym env start`` runs it in the group's one child process. :func:`build_server` builds one instance
  after the binding rule, for both.
- :class:`HostedHere` serves the group inside the supervisor's own process instead — what a serving
  ``gym eval run`` does, so that the collector's calls to its agents skip the socket as well (one process
  for the whole job, the shape of an in-process evaluator).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rewardgym.config.secrets import redact_text
from rewardgym.errors import RewardGymError
from rewardgym.http import local
from rewardgym.launch.binding import check_bind
from rewardgym.launch.child_spec import ChildSpec, server_class
from rewardgym.launch.serve import Servable, check_port_free, uvicorn_config

if TYPE_CHECKING:
    import uvicorn

    from rewardgym.servers.base import BaseServer

__all__ = ["HOSTED_GC_THRESHOLDS", "HostedHere", "build_server", "embedded_uvicorn", "serve_together"]

HOSTED_GC_THRESHOLDS = (300_000, 20, 20)
"""``gc.set_threshold`` of a process that serves a colocated stack. Every rollout's objects live in this one
heap (256 rollouts in flight, the sessions, the cookie caches), so a young collection walks every object of
the rollouts in flight: a serving ``gym eval run ++colocate=true`` of 20,000 mcqa rollouts (no reference
cycles left per request; gc.callbacks) spent 0.16-0.17 s of its CPU in collections at 100,000, 0.05-0.07 s at
300,000, with the same peak RSS (139 MiB). (While the lean client still left a reference cycle per request,
the same run spent 1.3-1.8 s at the servers' 20,000 and 0.45-0.6 s at 100,000.)"""


def embedded_uvicorn(config: uvicorn.Config) -> uvicorn.Server:
    """uvicorn inside a loop that owns the signals (the supervisor's head, colocated servers)."""
    import uvicorn

    class EmbeddedUvicorn(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return EmbeddedUvicorn(config)


def build_server(spec: ChildSpec) -> BaseServer[Any]:
    """The server of ``spec``, once its host passed the binding rule (:func:`~.binding.check_bind`)."""
    check_bind(spec.name, spec.host, network_bind=spec.network_bind, token=spec.config.get("auth_token"))
    return server_class(spec.kind, spec.implementation)(spec.config)


class _Group:
    """Built servers served on the running event loop, each on its own uvicorn server and port and each
    registered for in-process calls; when one ends, the others are asked to stop (as one process would)."""

    def __init__(self, servers: Sequence[Servable]) -> None:
        self.servers = list(servers)
        self.running: list[uvicorn.Server] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.failure: str | None = None
        """Why the group ended early: a server could not start."""

    def start(self) -> asyncio.Future[list[None]]:
        """Start every server; the returned future ends when all of them have."""
        configs = [uvicorn_config(server) for server in self.servers]
        self.running = [embedded_uvicorn(config) for config in configs]
        self.tasks = [asyncio.create_task(self._serve(server)) for server in self.running]
        for server, config in zip(self.servers, configs, strict=True):
            local.host(server.config.host, server.config.port, cast("local.ASGIApp", config.app))
        return asyncio.gather(*self.tasks)

    async def _serve(self, server: uvicorn.Server) -> None:
        try:
            await server.serve()
        except SystemExit as exc:  # uvicorn exits when it cannot bind or its lifespan fails
            self.failure = self.failure or f"a colocated server stopped at start-up (uvicorn exit {exc.code})"
        if not server.started:
            self.failure = self.failure or "a colocated server stopped before it started"
        self.terminate()

    def terminate(self) -> None:
        for server in self.running:
            server.should_exit = True

    def kill(self) -> None:
        for task in self.tasks:
            task.cancel()

    def unhost(self) -> None:
        for server in self.servers:
            local.unhost(server.config.host, server.config.port)


async def _serve_until_signalled(servers: Sequence[Servable]) -> int:
    group = _Group(servers)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, group.terminate)
    try:
        await group.start()
    finally:
        group.unhost()
    if group.failure is not None:
        sys.stderr.write(f"Error: {group.failure}\n")
        return 1
    return 0


def serve_together(servers: Sequence[Servable]) -> int:
    """Serve ``servers`` from this process until SIGINT/SIGTERM (module docstring); the exit code."""
    for server in servers:
        check_port_free(server.config.host, server.config.port)
    gc.set_threshold(*HOSTED_GC_THRESHOLDS)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency
        return asyncio.run(_serve_until_signalled(servers))
    return uvloop.run(_serve_until_signalled(servers))


class HostedHere:
    """Colocated servers served by the supervisor's own process and event loop — a serving ``gym eval run``:
    the collector then reaches its agents without a socket too. To the supervisor it stands for the group's
    child process: ``pid`` (this process), ``returncode`` (set when every server has ended: 0, or 1 when one
    could not be built or started, was killed or crashed — the reason is written to ``log``), :meth:`wait`,
    :meth:`terminate` (graceful stop) and :meth:`kill` (cancel)."""

    def __init__(self, specs: Sequence[ChildSpec], log: Path) -> None:
        self.specs = list(specs)
        self.log = log
        self.pid = os.getpid()
        self.returncode: int | None = None
        self._ended = asyncio.Event()
        self._group: _Group | None = None

    def _end(self, code: int, reason: str | None = None) -> None:
        if reason is not None:
            with self.log.open("a", encoding="utf-8") as handle:
                handle.write(f"Error: {redact_text(reason)}\n")
        if self._group is not None:
            self._group.unhost()
        if self.returncode is None:
            self.returncode = code
        self._ended.set()

    async def start(self) -> None:
        """Build every server and start serving them (returns at once; readiness is probed as for a child)."""
        servers: list[Servable] = []
        for spec in self.specs:
            try:
                check_port_free(spec.host, spec.port)
                servers.append(build_server(spec))
            except RewardGymError as exc:
                self._end(1, f"{spec.name}: {exc}")
                return
        # This process now holds servers' state (sessions, cookie caches): collect cycles in server-sized
        # batches, and leave everything imported and built so far out of every full collection.
        gc.set_threshold(*HOSTED_GC_THRESHOLDS)
        gc.freeze()
        self._group = _Group(servers)
        self._group.start().add_done_callback(self._ended_with)

    def _ended_with(self, watcher: asyncio.Future[list[None]]) -> None:
        assert self._group is not None
        crashed = watcher.cancelled() or watcher.exception() is not None  # killed, or a server crashed
        failure = self._group.failure
        self._end(1 if crashed or failure else 0, failure)

    async def wait(self) -> int:
        await self._ended.wait()
        assert self.returncode is not None
        return self.returncode

    def terminate(self) -> None:
        if self._group is not None:
            self._group.terminate()

    def kill(self) -> None:
        if self._group is None:
            self._end(1)
        else:
            self._group.kill()
