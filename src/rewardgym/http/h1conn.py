"""One HTTP/1.1 client connection (an asyncio protocol driving httptools), its reply and its failures.

Used by :mod:`rewardgym.http.h1pool`, which owns the contract (framing, reuse, timeouts). A connection
carries at most one request at a time; it is reusable only after a complete reply that allows keep-alive.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit

import httptools


class H1Error(Exception):
    """Base of this transport's failures."""


class H1ConnectError(H1Error, ConnectionError):
    """The TCP connection could not be established (``dns_failure``: the host name did not resolve)."""

    def __init__(self, message: str, *, dns_failure: bool = False) -> None:
        super().__init__(message)
        self.dns_failure = dns_failure


class H1Disconnected(H1Error, ConnectionError):
    """The peer closed or reset the connection before the reply was complete."""


class H1ProtocolError(H1Error):
    """The peer answered something that is not valid HTTP/1.1."""


class H1HeaderError(H1Error, ValueError):
    """A request header would break the header block (a CR/LF in its value): refused before sending."""


class H1ReplyTooLarge(H1Error):
    """The reply's headers and body grew past the connection's ``max_reply_bytes``: the connection is
    closed at once, the rest is never read."""


class Headers(dict[str, str]):
    """Reply headers with lower-cased names; lookups ignore case (repeated headers are joined by ", ")."""

    def get(self, key: str, default: Any = None) -> Any:
        return dict.get(self, key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return dict.__getitem__(self, key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and dict.__contains__(self, key.lower())


@dataclass(slots=True)
class H1Reply:
    """A complete reply."""

    status: int
    headers: Headers
    set_cookies: list[str] = field(default_factory=list)
    body: bytes = b""


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed ``http://`` URL: the peer and the request target."""

    host: str
    port: int
    target: bytes
    host_header: bytes

    @staticmethod
    def supported(url: str) -> bool:
        """Whether ``url`` is one this transport sends: plain ``http://``, ASCII, no credentials in it
        (anything else — TLS, ``user:pass@``, IRIs — is left to aiohttp)."""
        if not url.startswith("http://") or not url.isascii():
            return False
        return "@" not in urlsplit(url).netloc

    @classmethod
    def parse(cls, url: str) -> Target:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname or not url.isascii() or "@" in parts.netloc:
            raise ValueError(f"not a plain http:// URL: {url!r}")
        port = parts.port or 80
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname  # IPv6 literal
        netloc = host if parts.port is None else f"{host}:{port}"
        return cls(parts.hostname, port, path.encode("ascii"), netloc.encode("ascii"))


class Connection(asyncio.Protocol):
    """One TCP connection; at most one request in flight."""

    def __init__(self, max_reply_bytes: int | None = None) -> None:
        self.max_reply_bytes = max_reply_bytes
        self.reply_bytes = 0
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future[H1Reply] | None = None
        self.reply: H1Reply | None = None
        self.body: list[bytes] = []
        self.header_name = b""
        self.received = False
        self.closed = False
        self.reusable = False
        self.last_used = 0.0
        self.last_data = 0.0
        self.used = 0

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's

    def data_received(self, data: bytes) -> None:
        self.received = True
        self.last_data = time.monotonic()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(H1ProtocolError(f"malformed HTTP reply: {exc}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.reusable = False
        reply = self.reply
        # A reply framed by connection close (no length, not chunked) ends here.
        if reply is not None and self.waiter is not None and self._read_to_eof():
            self._finish()
            return
        reason = f": {exc}" if exc else ""
        self._fail(H1Disconnected(f"connection closed by the peer before the reply was complete{reason}"))

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        if self.max_reply_bytes is not None and self._over_limit(len(name) + len(value)):
            return
        if self.reply is None:
            self.reply = H1Reply(0, Headers())
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        if key == "set-cookie":
            self.reply.set_cookies.append(text)
        headers = self.reply.headers
        previous = dict.get(headers, key)
        headers[key] = text if previous is None else f"{previous}, {text}"

    def on_headers_complete(self) -> None:
        if self.reply is None:
            self.reply = H1Reply(0, Headers())
        self.reply.status = self.parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        if self.max_reply_bytes is not None and self._over_limit(len(body)):
            return
        self.body.append(body)

    def on_message_complete(self) -> None:
        if self.reply is None or self.reply.status < 200:  # an interim 1xx reply: the real one follows
            self.reply = None
            self.body.clear()
            return
        self.reusable = self.parser.should_keep_alive()
        self._finish()

    # helpers
    def _over_limit(self, more: int) -> bool:
        """Count ``more`` reply bytes; past the limit, fail the request and close (nothing more is kept)."""
        self.reply_bytes += more
        limit = self.max_reply_bytes
        if limit is None or self.reply_bytes <= limit:
            return False
        if not self.closed:
            self.body.clear()
            self._fail(H1ReplyTooLarge(f"reply larger than {limit:,} bytes (http.max_reply_bytes)"))
            self.close()
        return True

    def _read_to_eof(self) -> bool:
        reply = self.reply
        if reply is None or reply.status == 0:
            return False
        headers = reply.headers
        return "content-length" not in headers and "chunked" not in headers.get("transfer-encoding", "")

    def _finish(self) -> None:
        reply, waiter = self.reply, self.waiter
        self.reply, self.waiter = None, None
        if reply is not None:
            body = self.body
            reply.body = body[0] if len(body) == 1 else b"".join(body)
            body.clear()
            if waiter is not None and not waiter.done():
                waiter.set_result(reply)
            else:  # a reply nobody asked for: the connection is out of step, never reuse it
                self.reusable = False

    def _fail(self, exc: Exception) -> None:
        waiter = self.waiter
        self.waiter = None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def send(self, data: bytes, waiter: asyncio.Future[H1Reply]) -> None:
        transport = self.transport
        if transport is None:
            raise H1Disconnected("the connection is not open")
        self.waiter = waiter
        self.reply = None
        self.body.clear()
        self.reply_bytes = 0
        self.received = False
        self.last_data = time.monotonic()
        self.used += 1
        transport.write(data)

    def close(self) -> None:
        self.reusable = False
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.close()
