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
  calls once every one of them has started; graceful shutdown as for one server.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, cast

from rewardgym.http import local
from rewardgym.launch.serve import GC_THRESHOLDS, Servable, check_port_free, uvicorn_config

if TYPE_CHECKING:
    import uvicorn

__all__ = ["embedded_uvicorn", "serve_together"]


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
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency
        asyncio.run(_serve(servers))
    else:
        uvloop.run(_serve(servers))
