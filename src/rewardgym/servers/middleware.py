"""What every request of a server passes: authentication, request-size limit, session, last-resort errors.

Contract (:class:`Gate`, applied by :class:`~rewardgym.servers.app.ServerApp` to every HTTP request before
any routing):
- With an ``auth_token``, every request except ``GET /`` must carry ``Authorization: Bearer <token>`` or
  ``X-Rewardgym-Token: <token>`` (compared in constant time); otherwise HTTP 401.
- A body larger than ``max_request_bytes`` (by ``Content-Length``, or counted while streaming a body sent
  without one) gets HTTP 413.
- ``request.session["session_id"]`` is set on every request (a uuid4 hex on first contact, else kept) and the
  signed session cookie is re-sent on every response, as NeMo Gym does (:mod:`rewardgym.servers.cookies`).

:class:`LastResortMiddleware` (innermost user middleware of the FastAPI stack) and the direct dispatch path
answer any exception that escaped the app's handlers with HTTP 500 and the JSON error body — never a
traceback — after logging the traceback to the server log; a body found too large while streaming is 413.
"""

from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rewardgym.config.secrets import redact_text
from rewardgym.servers.cookies import SESSION_ID_KEY, Header, SessionCookies
from rewardgym.servers.wire import error_body

__all__ = ["SESSION_ID_KEY", "BodyTooLarge", "Gate", "LastResortMiddleware", "RequestHead", "send_json"]


class BodyTooLarge(Exception):
    """Raised by a size-limited ``receive`` when the body grows past the limit."""


async def send_json(send: Send, status: int, body: object, headers: list[Header] | None = None) -> None:
    """Send a complete JSON response through a raw ASGI ``send``."""
    payload = orjson.dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(headers or ()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


@dataclass(slots=True)
class RequestHead:
    """What the gate read from the request headers in one pass."""

    authorized: bool
    content_length: int
    """``-1`` when the request has no ``Content-Length``."""
    chunked: bool
    cookie: bytes | None
    deadline: bytes | None = None
    """The caller's ``X-Rewardgym-Deadline`` (:mod:`rewardgym.http.deadline`)."""


class Gate:
    """Authentication, size limit and session cookie of one server; see the module docstring."""

    def __init__(
        self,
        *,
        server_id: str,
        max_request_bytes: int,
        auth_token: str | None,
        session_secret: str,
        logger: logging.Logger,
    ) -> None:
        self.server_id = server_id
        self.max_bytes = max_request_bytes
        self.token = auth_token.encode() if auth_token else None
        self.cookies = SessionCookies(session_secret, server_id)
        self.log = logger
        self.unauthorized_body = error_body(
            server_id, "unauthorized", "missing or wrong authentication token"
        )
        self.too_large_body = error_body(
            server_id, "request_too_large", f"request body exceeds {max_request_bytes} bytes"
        )

    def read_head(self, headers: list[tuple[bytes, bytes]]) -> RequestHead:
        """One pass over the request headers."""
        token = self.token
        authorized = token is None
        length = -1
        chunked = False
        cookie = None
        deadline = None
        for key, value in headers:
            if key == b"content-length":
                length = int(value) if value.isdigit() else -1
            elif key == b"cookie":
                if cookie is None:
                    cookie = value
            elif key == b"transfer-encoding":
                chunked = True
            elif key == b"x-rewardgym-deadline":
                deadline = value
            elif not authorized and token is not None:
                if key == b"x-rewardgym-token":
                    authorized = hmac.compare_digest(value.strip(), token)
                elif key == b"authorization" and value[:7].lower() == b"bearer ":
                    authorized = hmac.compare_digest(value[7:].strip(), token)
        return RequestHead(authorized, length, chunked, cookie, deadline)

    def limit(self, receive: Receive) -> Receive:
        """``receive`` that raises :class:`BodyTooLarge` once the body exceeds the limit."""
        received = 0
        limit = self.max_bytes

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge
            return message

        return limited

    async def internal_error(self, scope: Scope, send: Send, exc: Exception, headers: list[Header]) -> None:
        """Log ``exc`` with its traceback and answer 500 with the JSON error body (no traceback)."""
        self.log.error(
            "unhandled error in %s %s",
            scope["method"],
            scope["path"],
            exc_info=(type(exc), exc, exc.__traceback__),
        )
        message = redact_text(f"{type(exc).__name__}: {exc}")
        await send_json(send, 500, error_body(self.server_id, "internal_error", message), headers)


class LastResortMiddleware:
    """Innermost user middleware of the FastAPI stack: uncaught exceptions → 500 JSON, streaming 413."""

    def __init__(self, app: ASGIApp, *, gate: Gate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await send_json(send, 413, self.gate.too_large_body)
        except Exception as exc:
            if not started:
                await self.gate.internal_error(scope, send, exc, [])
            else:
                self.gate.log.exception("unhandled error in %s %s", scope["method"], scope["path"])
