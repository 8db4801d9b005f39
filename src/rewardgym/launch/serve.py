"""Running a built server: uvicorn settings, a port check, and an in-process runner for tests and tools.

Contract:
- :func:`uvicorn_config` is the one place uvicorn is configured: uvloop and httptools when importable,
  access log off, no proxy-header rewriting (servers talk to each other directly), no websockets, lifespan on,
  keep-alive 30 s (longer than the client pool's 15 s, so the client closes
  idle connections first), graceful shutdown bounded by the server's ``graceful_shutdown_s``, and the
  request read deadline of :mod:`rewardgym.servers.deadline` (``request_read_timeout_s``: a client that does
  not deliver a whole request in time is disconnected, so half-open connections cannot pile up).
- :func:`check_port_free` raises :class:`~rewardgym.errors.ServerError` naming host:port when it cannot be
  bound (used before launching, so "port in use" is a clear error rather than a dead child).
- :class:`ThreadedServer` runs a server (anything with ``config`` and ``build_app()``, e.g. a
  :class:`~rewardgym.servers.base.BaseServer`) or a bare ASGI app in a background thread on a real
  127.0.0.1 port (port 0 picks a free one) and waits for it to be serving, polling with a deadline; used
  by tests and benchmarks.
- :data:`GC_THRESHOLDS`: a server process collects garbage cycles every 20,000 net allocations instead of
  every 700 (each request allocates hundreds of short-lived containers, so the default ran a young-generation
  collection every request or two: ≈ 2 % of a server's CPU at 10^3 rollouts/s). Cycles are still collected,
  only in larger batches; :func:`serve_forever` sets it in the server's own process. (The collector keeps
  the default: there the larger batches cost ≈ 10 MiB of peak RSS, and its RSS is to stay flat.)
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import math
import socket
import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, cast

from rewardgym.errors import ServerError
from rewardgym.servers.config import ServerConfig

if TYPE_CHECKING:  # uvicorn and the server base (FastAPI) are imported on use: check_port_free stays light
    import uvicorn
    from starlette.types import ASGIApp

GC_THRESHOLDS = (20_000, 20, 20)
"""``gc.set_threshold`` of a server process (see the module docstring)."""


class Servable(Protocol):
    """What uvicorn needs of a server: its config (host, port, shutdown grace) and its ASGI app."""

    @property
    def config(self) -> ServerConfig: ...

    def build_app(self) -> ASGIApp: ...


def _loop_kind() -> str:
    return "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"


def _http_kind(request_read_timeout_s: float) -> str | type[asyncio.Protocol]:
    if not importlib.util.find_spec("httptools"):
        return "h11"  # not reached in practice: httptools is a dependency (the lean client uses it too)
    from rewardgym.servers.deadline import protocol_class

    return protocol_class(request_read_timeout_s)


def uvicorn_config(server: Servable, *, host: str | None = None, port: int | None = None) -> uvicorn.Config:
    """uvicorn settings for ``server`` (binding ``host``/``port``, defaulting to its config)."""
    import uvicorn

    return uvicorn.Config(
        server.build_app(),
        host=host if host is not None else server.config.host,
        port=port if port is not None else server.config.port,
        loop=_loop_kind(),
        http=_http_kind(server.config.request_read_timeout_s),
        lifespan="on",
        ws="none",
        log_config=None,
        access_log=False,
        proxy_headers=False,
        timeout_keep_alive=30,
        timeout_graceful_shutdown=max(1, math.ceil(server.config.graceful_shutdown_s)),
        server_header=False,
    )


def check_port_free(host: str, port: int) -> None:
    """Raise :class:`ServerError` if ``host:port`` cannot be bound right now."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            reason = "already in use" if exc.errno == 98 else exc.strerror
            raise ServerError(f"cannot listen on {host}:{port}: {reason}") from None


def serve_forever(server: Servable) -> None:
    """Run ``server`` in this process until SIGINT/SIGTERM (the child-process entry point uses this)."""
    import uvicorn

    check_port_free(server.config.host, server.config.port)
    gc.set_threshold(*GC_THRESHOLDS)
    uvicorn.Server(uvicorn_config(server)).run()


class ThreadedServer:
    """A server (or any ASGI app) running in a background thread on a real port.

    ``with ThreadedServer(server) as ts: ts.url`` — port 0 picks a free port, read back from ``ts.port``.
    """

    def __init__(
        self, target: Servable | ASGIApp, *, host: str = "127.0.0.1", port: int = 0, name: str = "app"
    ) -> None:
        import uvicorn

        if callable(getattr(target, "build_app", None)):  # a server object (BaseServer, HeadServer)
            server: Servable = target  # type: ignore[assignment]
            config = uvicorn_config(server, host=host, port=port)
            name = server.config.name
        else:
            config = uvicorn.Config(
                cast("ASGIApp", target),
                host=host,
                port=port,
                log_config=None,
                access_log=False,
                lifespan="off",
                timeout_graceful_shutdown=1,
            )
        self.name = name
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name=f"server-{name}", daemon=True)
        self._error: BaseException | None = None
        self.host = host
        self.port = port

    def _run(self) -> None:
        try:
            asyncio.run(self._uvicorn.serve())
        except BaseException as exc:
            self._error = exc

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout_s: float = 20.0) -> ThreadedServer:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._uvicorn.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ServerError(f"server {self.name} did not start: {self._error!r}")
            time.sleep(0.005)
        sockets = self._uvicorn.servers[0].sockets
        self.port = int(sockets[0].getsockname()[1])
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        self._uvicorn.should_exit = True
        self._thread.join(timeout_s)

    def __enter__(self) -> ThreadedServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
