"""The ASGI middleware of every server: authentication, request-size limit, session id, last-resort errors.

Contract (runs inside Starlette's ``SessionMiddleware``, outside FastAPI's exception handling):
- With an ``auth_token``, every request except ``GET /`` must carry ``Authorization: Bearer <token>`` or
  ``X-Rewardgym-Token: <token>`` (compared in constant time); otherwise HTTP 401.
- A body larger than ``max_request_bytes`` (by ``Content-Length`` or counted while streaming) gets HTTP 413.
- ``request.session["session_id"]`` is set on every request (a uuid4 hex on first contact, else kept), so the
  signed session cookie is re-sent on every response, as NeMo Gym does.
- Any exception that escaped the app's handlers is logged with its traceback to the server log and answered
  with HTTP 500 and the JSON error body — never a traceback over HTTP.
"""

from __future__ import annotations

import hmac
import logging
import uuid

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rewardgym.config.secrets import redact_text
from rewardgym.servers.wire import error_body

SESSION_ID_KEY = "session_id"


class _BodyTooLarge(Exception):
    pass


async def send_json(send: Send, status: int, body: object) -> None:
    payload = orjson.dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class GuardMiddleware:
    """See the module docstring."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        server_id: str,
        max_request_bytes: int,
        auth_token: str | None,
        logger: logging.Logger,
    ) -> None:
        self.app = app
        self.server_id = server_id
        self.max_bytes = max_request_bytes
        self.token = auth_token.encode() if auth_token else None
        self.log = logger

    def _authorized(self, headers: list[tuple[bytes, bytes]]) -> bool:
        assert self.token is not None
        for key, value in headers:
            if key == b"x-rewardgym-token":
                candidate = value.strip()
            elif key == b"authorization" and value[:7].lower() == b"bearer ":
                candidate = value[7:].strip()
            else:
                continue
            if hmac.compare_digest(candidate, self.token):
                return True
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        is_liveness = scope["method"] == "GET" and scope["path"] == "/"
        if self.token is not None and not is_liveness and not self._authorized(headers):
            await send_json(
                send,
                401,
                error_body(self.server_id, "unauthorized", "missing or wrong authentication token"),
            )
            return
        for key, value in headers:
            if key == b"content-length":
                if value.isdigit() and int(value) > self.max_bytes:
                    await self._too_large(send)
                    return
                break
        session = scope.get("session")
        if session is not None:
            session[SESSION_ID_KEY] = session.get(SESSION_ID_KEY) or uuid.uuid4().hex

        started = False
        received = 0

        async def guarded_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, guarded_receive, tracking_send)
        except _BodyTooLarge:
            if not started:
                await self._too_large(send)
        except Exception as exc:
            self.log.exception("unhandled error in %s %s", scope["method"], scope["path"])
            if not started:
                message = redact_text(f"{type(exc).__name__}: {exc}")
                await send_json(send, 500, error_body(self.server_id, "internal_error", message))

    async def _too_large(self, send: Send) -> None:
        await send_json(
            send,
            413,
            error_body(self.server_id, "request_too_large", f"request body exceeds {self.max_bytes} bytes"),
        )
