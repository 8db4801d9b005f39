"""The in-process transport: a request to a server hosted by this very process, without a socket.

Why it exists: with ``colocate: true`` (:mod:`rewardgym.launch.colocate`) ``gym env start`` serves several
servers from one process; an agent's calls to its environment and model server then cross no process
boundary, and at 10^3 rollouts/s the two HTTP ends of each such hop (the kernel's loopback, uvicorn's
protocol, our client's parser, an event-loop wake-up on each side) were most of the stack's CPU.

Contract:
- :func:`host` registers the ASGI app listening on ``(host, port)`` of this process;
  :func:`hosted` answers whether a URL's peer is one (the lean client, :class:`~rewardgym.http.h1pool.H1Pool`,
  asks it before opening a connection: every server's client and the collector's); :func:`unhost` removes
  it (the server stopped).
- :func:`exchange` runs one request through the app exactly as uvicorn would hand it over — an ASGI
  ``http`` scope with the method, path, query, the headers (``host``, ``content-length`` included) and
  the body — so the server's gate (auth token, size limit, session cookie), routes, exception handlers and
  capture behave as over TCP; the reply (status, lower-cased headers, ``Set-Cookie`` values, body) is the
  one the socket would have carried.
- Isolation: the app runs in its own task with a fresh :mod:`contextvars` context (as in another
  process: the caller's deadline or logging context never leaks into the server, nor back).
- Bounds: ``timeout_s`` bounds the whole exchange (:class:`TimeoutError`; the server's task is cancelled,
  as a client disconnect would end it); a reply past ``max_reply_bytes`` raises :class:`ReplyTooLarge`
  at once; an app that ends without a complete reply raises :class:`LocalDisconnected`.
- Only plain ``http://`` peers on this process's own listening addresses are hosted; everything else goes
  over the network as before.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine, MutableMapping
from typing import Any

from rewardgym.http.h1conn import H1Disconnected, H1Reply, H1ReplyTooLarge, Headers, Target

__all__ = ["BODY_SCOPE_KEY", "LocalDisconnected", "ReplyTooLarge", "exchange", "host", "hosted", "unhost"]

BODY_SCOPE_KEY = "rewardgym.local_body"
"""The whole request body, also put in the scope of an in-process request (the ``http.request`` message
carries the same bytes): a server may take it from there instead of reading the message stream."""

ASGIApp = Callable[..., Coroutine[Any, Any, None]]
"""An ASGI application: ``await app(scope, receive, send)``."""

_apps: dict[tuple[str, int], ASGIApp] = {}


class LocalDisconnected(H1Disconnected):
    """The hosted app ended (or failed) without a complete reply."""


class ReplyTooLarge(H1ReplyTooLarge):
    """The hosted app's reply passed the caller's ``max_reply_bytes``."""


def host(address: str, port: int, app: ASGIApp) -> None:
    """Serve requests to ``http://address:port`` in this process through ``app``."""
    _apps[(address, port)] = app


def unhost(address: str, port: int) -> None:
    _apps.pop((address, port), None)


def hosted(target: Target) -> ASGIApp | None:
    """The app of this process listening where ``target`` points, if any."""
    if not _apps:
        return None
    return _apps.get((target.host, target.port))


# Header names as the wire would carry them, each converted once: a hop sends and answers the same few
# names (content-type, cookie, set-cookie, …) every time. Bounded: a peer cannot grow them without limit.
_request_names: dict[str, bytes] = {}
_reply_names: dict[bytes, str] = {}
_NAMES_KEPT = 256


def _request_name(name: str) -> bytes:
    found = _request_names.get(name)
    if found is None:
        found = name.lower().encode("latin-1")
        if len(_request_names) < _NAMES_KEPT:
            _request_names[name] = found
    return found


def _reply_name(name: bytes) -> str:
    found = _reply_names.get(name)
    if found is None:
        found = name.decode("latin-1").lower()
        if len(_reply_names) < _NAMES_KEPT:
            _reply_names[name] = found
    return found


def _scope(method: str, target: Target, body: bytes | None, headers: dict[str, str]) -> dict[str, Any]:
    raw = target.target
    path, _, query = raw.partition(b"?")
    pairs = [(b"host", target.host_header)]
    pairs += [(_request_name(name), value.encode("utf-8")) for name, value in headers.items()]
    if body is not None:
        pairs.append((b"content-length", str(len(body)).encode("ascii")))
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "server": (target.host, target.port),
        "client": ("127.0.0.1", 0),
        "scheme": "http",
        "method": method,
        "root_path": "",
        "path": path.decode("latin-1"),
        "raw_path": path,
        "query_string": query,
        "headers": pairs,
        "state": {},
        BODY_SCOPE_KEY: body or b"",
    }


async def exchange(
    app: ASGIApp,
    method: str,
    target: Target,
    body: bytes | None,
    headers: dict[str, str],
    *,
    timeout_s: float | None,
    max_reply_bytes: int | None,
) -> H1Reply:
    """One request through a hosted app; the complete reply (module docstring for the failures)."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[None] = loop.create_future()
    reply = H1Reply(0, Headers())
    chunks: list[bytes] = []
    size = 0
    sent_body = False

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body or b"", "more_body": False}
        await asyncio.wait([finished])  # asked again: a streaming reply listening for a disconnect
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal size
        if finished.done():
            return  # the caller has gone (as uvicorn ignores sends after a disconnect)
        kind = message["type"]
        if kind == "http.response.start":
            reply.status = int(message["status"])
            found = reply.headers
            for name, value in message.get("headers", ()):
                key, text = _reply_name(name), value.decode("latin-1")
                if key == "set-cookie":
                    reply.set_cookies.append(text)
                earlier = dict.get(found, key)  # names are lower-cased already: the plain dict lookup
                dict.__setitem__(found, key, text if earlier is None else f"{earlier}, {text}")
        elif kind == "http.response.body":
            chunk = message.get("body", b"")
            size += len(chunk)
            if max_reply_bytes is not None and size > max_reply_bytes:
                finished.set_exception(ReplyTooLarge(f"reply larger than {max_reply_bytes} bytes"))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                finished.set_result(None)

    def ended(task: asyncio.Task[None]) -> None:
        _running.discard(task)
        error = None if task.cancelled() else task.exception()  # retrieved: never "never retrieved"
        if not finished.done():  # the app returned or failed before its reply was complete
            reason = f" ({type(error).__name__})" if error else ""
            finished.set_exception(
                LocalDisconnected(f"the server ended the request without a complete reply{reason}")
            )

    def expire() -> None:
        if not finished.done():
            finished.set_exception(TimeoutError(f"no complete reply within {timeout_s:g} s"))

    scope = _scope(method, target, body, headers)
    task: asyncio.Task[None] = loop.create_task(app(scope, receive, send), context=contextvars.Context())
    _running.add(task)  # referenced until it ends: it may run on after its reply, as a server does
    task.add_done_callback(ended)
    timer = None if timeout_s is None else loop.call_later(timeout_s, expire)
    try:
        await finished
    except BaseException:
        task.cancel()  # timed out, too large, cancelled by the caller: the server's work stops
        raise
    finally:
        if timer is not None:
            timer.cancel()
    reply.body = b"".join(chunks)
    return reply


_running: set[asyncio.Task[None]] = set()
"""Apps still running for an exchange already answered: referenced so they are not collected mid-way."""
