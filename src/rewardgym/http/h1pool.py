"""A lean keep-alive HTTP/1.1 client transport for plain ``http://`` peers.

Why it exists: every rollout crosses five HTTP hops (collector → agent → environment / model → upstream),
and at 10^3 rollouts/s the generic client's per-request machinery (aiohttp builds a request object, a
response object, a stream reader and several futures per call) was half of the agent's CPU. This transport
does the minimum a JSON request/response needs: one pre-built header block, one write, httptools (the
parser uvicorn uses) for the reply, one future. :class:`~rewardgym.http.client.HttpClient` uses it for
``http://`` URLs and keeps aiohttp for ``https://`` (TLS, redirects and the rest of HTTP).

Contract:
- :meth:`H1Pool.request` sends one request and returns the whole reply (:class:`H1Reply`: status,
  lower-cased headers, ``Set-Cookie`` values, body). Replies framed by ``Content-Length``, chunked encoding or
  connection close are supported; request bodies are sent with ``Content-Length``.
- Connections are kept alive per (host, port), at most ``limit`` open per peer (callers beyond that wait
  for one to be released), and an idle connection older than ``idle_s`` is closed rather than reused — below
  uvicorn's default keep-alive of 5 s, so a reused connection is rarely one the peer is closing.
- A request written on a *reused* connection that the peer closed before sending a single byte is sent again
  once on a fresh connection (the peer saw nothing it answered; this is the keep-alive race every client
  handles). No other failure is retried here: retry policy belongs to the caller.
- Failures raise :class:`H1ConnectError` (cannot connect), :class:`H1Disconnected` (connection lost
  mid-request), :class:`H1ProtocolError` (malformed HTTP), :class:`H1ReplyTooLarge` (headers + body past
  ``max_reply_bytes``: the connection is closed as soon as the limit is passed) or :class:`TimeoutError`
  (``connect_timeout_s`` to connect; ``read_timeout_s`` without a byte from the peer; ``total_timeout_s``
  for the whole request).
  A cancelled or failed request closes its connection: a connection is only reused after a complete reply.
- A peer that is a server hosted by this very process (:mod:`rewardgym.http.local`, ``colocate: true``) gets
  the same request without a socket: the reply, the limits and the failures (:class:`H1Disconnected`,
  :class:`H1ReplyTooLarge`, :class:`TimeoutError` for ``total_timeout_s``) are the same.
- Header values are sent as UTF-8, like aiohttp sends them, so both transports put the same bytes on the
  wire. Values are validated once where they are configured (:mod:`rewardgym.protocol.headers`); as a last
  line, a request whose header block would contain a CR or LF of a value is refused with
  :class:`H1HeaderError` (naming the header, never the value) instead of injecting a header.
"""

from __future__ import annotations

import asyncio
import math
import socket
import time
from collections import deque

from rewardgym.http import local
from rewardgym.http.h1conn import (
    Connection,
    H1ConnectError,
    H1Disconnected,
    H1Error,
    H1HeaderError,
    H1ProtocolError,
    H1Reply,
    H1ReplyTooLarge,
    Headers,
    Target,
)

__all__ = [
    "H1ConnectError",
    "H1Disconnected",
    "H1Error",
    "H1HeaderError",
    "H1Pool",
    "H1ProtocolError",
    "H1Reply",
    "H1ReplyTooLarge",
    "Headers",
    "Target",
]


def _injected(headers: dict[str, str]) -> str:
    for name, value in headers.items():
        if any(c in name or c in value for c in "\r\n"):
            return f"request header {name.encode('ascii', 'replace').decode()!r} contains CR/LF; not sent"
    return "the request line contains CR/LF; not sent"


def _has_line_break(headers: dict[str, str]) -> bool:
    """Whether a header name or value holds a CR or LF (what would inject a header on the wire)."""
    joined = "".join([*headers, *headers.values()])
    return "\r" in joined or "\n" in joined


class _Peer:
    """The connections to one (host, port): idle ones to reuse and a bound on how many are open."""

    def __init__(self, limit: int) -> None:
        self.idle: deque[Connection] = deque()
        self.open = 0
        self.limit = limit
        self.waiters: deque[asyncio.Future[None]] = deque()


class _ReplyClock:
    """Fails a request's ``waiter`` once its ``deadline`` passes or the peer has sent nothing for
    ``read_timeout`` seconds: one timer per request for both bounds, re-armed only when it fires early (bytes
    still arriving). :meth:`stop` drops the timer, which holds this clock: no reference cycle is left for
    the cycle collector (a closure that re-armed itself left 16 objects per request)."""

    __slots__ = ("_conn", "_deadline", "_handle", "_loop", "_read_timeout", "_total", "_waiter")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        conn: Connection,
        waiter: asyncio.Future[H1Reply],
        deadline: float | None,
        total: float | None,
        read_timeout: float | None,
    ) -> None:
        self._loop, self._conn, self._waiter = loop, conn, waiter
        self._deadline, self._total, self._read_timeout = deadline, total, read_timeout
        first = math.inf if deadline is None else deadline - time.monotonic()
        self._handle: asyncio.TimerHandle | None = loop.call_later(
            max(0.0, min(first, read_timeout or math.inf)), self._check
        )

    def _check(self) -> None:
        waiter = self._waiter
        if waiter.done() or self._handle is None:
            return
        now = time.monotonic()
        deadline, read_timeout = self._deadline, self._read_timeout
        if deadline is not None and now >= deadline:
            waiter.set_exception(TimeoutError(f"no complete reply within {self._total:g} s"))
            return
        wait = math.inf if deadline is None else deadline - now
        if read_timeout is not None:
            quiet = now - self._conn.last_data
            if quiet >= read_timeout:
                waiter.set_exception(TimeoutError(f"no data from the peer for {read_timeout:g} s"))
                return
            wait = min(wait, read_timeout - quiet)
        self._handle = self._loop.call_later(wait, self._check)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


class H1Pool:
    """Keep-alive HTTP/1.1 connections to plain-HTTP peers; see the module docstring for the contract."""

    def __init__(
        self,
        *,
        limit: int = 1024,
        idle_s: float = 4.0,
        connect_timeout_s: float = 5.0,
        read_timeout_s: float | None = 600.0,
        total_timeout_s: float | None = None,
        max_reply_bytes: int | None = None,
    ) -> None:
        self.limit = limit
        self.max_reply_bytes = max_reply_bytes
        self.idle_s = idle_s
        self.connect_timeout_s = connect_timeout_s
        self.read_timeout_s = read_timeout_s
        self.total_timeout_s = total_timeout_s
        self._peers: dict[tuple[str, int], _Peer] = {}
        self._targets: dict[str, Target] = {}
        self._closed = False

    def target(self, url: str) -> Target:
        """The parsed URL (cached: callers post to a handful of URLs many times)."""
        found = self._targets.get(url)
        if found is None:
            found = Target.parse(url)
            if len(self._targets) < 4096:
                self._targets[url] = found
        return found

    async def request(
        self,
        method: str,
        url: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        *,
        total_timeout_s: float | None = None,
    ) -> H1Reply:
        """Send one request and return the complete reply (see the module docstring for failures)."""
        if self._closed:
            raise H1Disconnected("the connection pool is closed")
        target = self.target(url)
        total = total_timeout_s if total_timeout_s is not None else self.total_timeout_s
        app = local.hosted(target)
        if app is not None:  # a server of this very process (colocated): the same request, no socket
            if headers and _has_line_break(headers):
                raise H1HeaderError(_injected(headers))
            limit = self.max_reply_bytes
            return await local.exchange(
                app, method, target, body, headers or {}, timeout_s=total, max_reply_bytes=limit
            )
        head = [method.encode("ascii"), b" ", target.target, b" HTTP/1.1\r\nHost: ", target.host_header]
        lines = 2  # the request line and Host
        if headers:
            lines += len(headers)
            for name, value in headers.items():
                head += (b"\r\n", name.encode("latin-1"), b": ", value.encode("utf-8"))
        if body is not None:
            lines += 1
            head += (b"\r\nContent-Length: ", str(len(body)).encode("ascii"))
        head.append(b"\r\n\r\n")
        block = b"".join(head)
        if block.count(b"\n") != lines + 1 or block.count(b"\r") != lines + 1:  # two C-speed scans
            raise H1HeaderError(_injected(headers or {}))
        data = block + body if body is not None else block
        deadline = None if total is None else time.monotonic() + total
        return await self._exchange(target, data, deadline, total)

    async def _exchange(
        self, target: Target, data: bytes, deadline: float | None, total: float | None
    ) -> H1Reply:
        peer = self._peers.get((target.host, target.port))
        if peer is None:
            peer = self._peers[(target.host, target.port)] = _Peer(self.limit)
        for _ in range(2):
            conn = self._idle(peer)
            if conn is None:
                if deadline is None:
                    conn = await self._acquire(peer, target)
                else:
                    async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                        conn = await self._acquire(peer, target)
            reused = conn.used > 0
            try:
                reply = await self._send(conn, data, deadline, total)
            except H1Disconnected:
                self._release(peer, conn)
                if reused and not conn.received:
                    continue  # the keep-alive race: the peer closed an idle connection as we wrote
                raise
            except BaseException:
                conn.close()  # cancelled or failed mid-request: the connection's state is unknown
                self._release(peer, conn)
                raise
            self._release(peer, conn)
            return reply
        raise H1Disconnected("connection closed by the peer before the reply was complete")

    async def _send(
        self, conn: Connection, data: bytes, deadline: float | None, total: float | None
    ) -> H1Reply:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[H1Reply] = loop.create_future()
        conn.send(data, waiter)
        read_timeout = self.read_timeout_s
        if read_timeout is None and deadline is None:
            return await waiter
        clock = _ReplyClock(loop, conn, waiter, deadline, total, read_timeout)
        try:
            return await waiter
        finally:
            clock.stop()

    def _idle(self, peer: _Peer) -> Connection | None:
        """A kept-alive connection to reuse, if there is one (stale ones are closed on the way)."""
        now = time.monotonic()
        while peer.idle:
            conn = peer.idle.pop()  # most recently used first: the likeliest to be alive
            if not conn.closed and now - conn.last_used < self.idle_s:
                return conn
            conn.close()
            peer.open -= 1
        return None

    async def _acquire(self, peer: _Peer, target: Target) -> Connection:
        """A new connection once the peer is below its limit (or a released one, after waiting)."""
        while peer.open >= peer.limit:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            peer.waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if not waiter.cancelled() and waiter.done():
                    self._wake(peer)  # pass the wake-up we consumed on
                raise
            conn = self._idle(peer)
            if conn is not None:
                return conn
        peer.open += 1
        try:
            return await self._connect(target)
        except BaseException:
            peer.open -= 1
            self._wake(peer)
            raise

    async def _connect(self, target: Target) -> Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                _, conn = await loop.create_connection(
                    lambda: Connection(self.max_reply_bytes), target.host, target.port
                )
        except TimeoutError:
            raise TimeoutError(
                f"could not connect to {target.host}:{target.port} within {self.connect_timeout_s:g} s"
            ) from None
        except socket.gaierror as exc:
            raise H1ConnectError(f"cannot resolve host {target.host!r}: {exc}", dns_failure=True) from None
        except OSError as exc:
            raise H1ConnectError(f"cannot connect to {target.host}:{target.port}: {exc}") from None
        return conn

    def _release(self, peer: _Peer, conn: Connection) -> None:
        if conn.reusable and not conn.closed and not self._closed:
            conn.last_used = time.monotonic()
            peer.idle.append(conn)
        else:
            conn.close()
            peer.open -= 1
        self._wake(peer)

    @staticmethod
    def _wake(peer: _Peer) -> None:
        while peer.waiters:
            waiter = peer.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def close(self) -> None:
        """Close every idle connection; connections in use close when their request ends."""
        self._closed = True
        for peer in self._peers.values():
            while peer.idle:
                peer.idle.pop().close()
                peer.open -= 1
        self._peers.clear()
