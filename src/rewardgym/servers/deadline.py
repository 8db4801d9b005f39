"""The HTTP protocol our servers run: uvicorn's httptools protocol plus a deadline on reading each request.

Why: uvicorn bounds only the idle time *between* requests of a kept-alive connection, and any byte cancels
that timer. A client that opens a connection and sends nothing, or sends a request head (or body) a byte
at a time, holds the connection — and its descriptor and buffers — forever; thousands of such half-open
connections exhaust a server (slowloris).

Contract:
- From the moment a connection is accepted, and again from the first byte of each further request on a
  kept-alive connection, the client has ``request_read_timeout_s`` to deliver the whole request (head and
  body). Past it the connection is closed without an answer (an application waiting for the body sees a
  disconnect). The time an application then takes to answer is not bounded here.
- Idle time between requests stays bounded by uvicorn's keep-alive timeout; everything else is uvicorn's.
- :func:`protocol_class` returns the protocol class for one timeout (uvicorn instantiates it per connection).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class DeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a per-request read deadline (see the module docstring)."""

    request_read_timeout_s: float = 30.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._read_deadline is None:
            self._arm()

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def _arm(self) -> None:
        self._read_deadline = self.loop.call_later(self.request_read_timeout_s, self._too_slow)

    def _disarm(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _too_slow(self) -> None:
        self._read_deadline = None
        if not self.transport.is_closing():
            self.transport.close()


def protocol_class(request_read_timeout_s: float) -> type[DeadlineProtocol]:
    """The protocol class uvicorn runs for a server whose clients get ``request_read_timeout_s``."""
    attributes = {"request_read_timeout_s": request_read_timeout_s}
    return type("DeadlineProtocol", (DeadlineProtocol,), attributes)
