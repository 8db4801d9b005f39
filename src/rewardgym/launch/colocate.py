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
  calls once every one of them has started; graceful shutdown as for one server. ``gym env start`` runs
  it in the group's one child process.
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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from rewardgym.config.secrets import redact_text
from rewardgym.errors import RewardGymError
from rewardgym.http import local
from rewardgym.launch.child_spec import ChildSpec, server_class
from rewardgym.launch.serve import Servable, check_port_free, uvicorn_config

if TYPE_CHECKING:
    import uvicorn

__all__ = ["HOSTED_GC_THRESHOLDS", "HostedHere", "embedded_uvicorn", "serve_together"]

HOSTED_GC_THRESHOLDS = (100_000, 20, 20)
"""``gc.set_threshold`` of a process that serves a colocated stack. Every rollout's objects live in this one
heap (256 rollouts in flight, the sessions, the cookie caches), so young collections find many survivors: a
serving ``gym eval run ++colocate=true`` of 20,000 mcqa rollouts spent 1.3-1.8 s of its 12-14 s of CPU in
the collector at the servers' 20,000 (gc.callbacks), 0.5-0.6 s at 100,000, for +6 MiB of peak RSS
(159-161 → 167 MiB); 200,000 saved no more."""


def embedded_uvicorn(config: uvicorn.Config) -> uvicorn.Server:
    """uvicorn inside a loop that owns the signals (the supervisor's head, colocated servers)."""
    import uvicorn

    class EmbeddedUvicorn(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return EmbeddedUvicorn(config)


async def _serve(servers: Sequence[Servable]) -> None:
    configs = [uvicorn_config(server) for server in servers]
    running = [embedded_uvicorn(config) for config in configs]
    loop = asyncio.get_running_loop()

    def stop() -> None:
        for server in running:
            server.should_exit = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop)
    tasks = [asyncio.create_task(server.serve()) for server in running]
    try:
        while not all(server.started for server in running):
            if any(task.done() for task in tasks):  # one could not start: the others stop too
                stop()
                break
            await asyncio.sleep(0.01)
        else:
            for server, config in zip(servers, configs, strict=True):
                local.host(server.config.host, server.config.port, cast("local.ASGIApp", config.app))
        await asyncio.gather(*tasks)
    finally:
        for server in servers:
            local.unhost(server.config.host, server.config.port)


def serve_together(servers: Sequence[Servable]) -> None:
    """Serve ``servers`` from this process until SIGINT/SIGTERM (module docstring)."""
    for server in servers:
        check_port_free(server.config.host, server.config.port)
    gc.set_threshold(*HOSTED_GC_THRESHOLDS)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency
        asyncio.run(_serve(servers))
    else:
        uvloop.run(_serve(servers))


class HostedHere:
    """Colocated servers served by the supervisor's own process and event loop — a serving ``gym eval run``:
    the collector then reaches its agents without a socket too. To the supervisor it stands for the group's
    child process: ``pid`` (this process), ``returncode`` (set when every server has ended: 0, or 1 when one
    could not be built or started — the reason is written to ``log``), :meth:`wait`, :meth:`terminate`
    (graceful stop) and :meth:`kill` (cancel)."""

    def __init__(self, specs: Sequence[ChildSpec], log: Path) -> None:
        self.specs = list(specs)
        self.log = log
        self.pid = os.getpid()
        self.returncode: int | None = None
        self._ended = asyncio.Event()
        self._running: list[uvicorn.Server] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._hosted: list[tuple[str, int]] = []

    def _fail(self, message: str) -> None:
        with self.log.open("a", encoding="utf-8") as handle:
            handle.write(f"Error: {redact_text(message)}\n")
        self._end(1)

    def _end(self, code: int) -> None:
        for address in self._hosted:
            local.unhost(*address)
        self._hosted.clear()
        if self.returncode is None:
            self.returncode = code
        self._ended.set()

    async def start(self) -> None:
        """Build every server and start serving them (returns at once; readiness is probed as for a child)."""
        from rewardgym.launch.binding import check_bind

        servers: list[Servable] = []
        for spec in self.specs:
            try:
                check_bind(spec.name, spec.host, network_bind=False, token=None)
                check_port_free(spec.host, spec.port)
                servers.append(server_class(spec.kind, spec.implementation)(spec.config))
            except RewardGymError as exc:
                self._fail(f"{spec.name}: {exc}")
                return
        # This process now holds servers' state (sessions, cookie caches): collect cycles in server-sized
        # batches, and leave everything imported and built so far out of every full collection.
        gc.set_threshold(*HOSTED_GC_THRESHOLDS)
        gc.freeze()
        configs = [uvicorn_config(server) for server in servers]
        self._running = [embedded_uvicorn(config) for config in configs]
        self._tasks = [asyncio.create_task(self._serve(server)) for server in self._running]
        for server, config in zip(servers, configs, strict=True):
            local.host(server.config.host, server.config.port, cast("local.ASGIApp", config.app))
            self._hosted.append((server.config.host, server.config.port))
        watcher = asyncio.gather(*self._tasks)
        watcher.add_done_callback(self._ended_with)

    def _ended_with(self, watcher: asyncio.Future[list[None]]) -> None:
        failed = watcher.cancelled() or watcher.exception() is not None  # killed, or a server crashed
        self._end(1 if failed else 0)

    async def _serve(self, server: uvicorn.Server) -> None:
        try:
            await server.serve()
        except SystemExit as exc:  # uvicorn exits when it cannot bind or its lifespan fails
            self._fail(f"a colocated server stopped at start-up (uvicorn exit {exc.code})")
        if not server.started and self.returncode is None:
            self._fail("a colocated server stopped before it started")
        self.terminate()  # one ended: the group ends (as one process would)

    async def wait(self) -> int:
        await self._ended.wait()
        assert self.returncode is not None
        return self.returncode

    def terminate(self) -> None:
        for server in self._running:
            server.should_exit = True

    def kill(self) -> None:
        for task in self._tasks:
            task.cancel()
        if not self._tasks:
            self._end(1)
