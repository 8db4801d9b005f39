"""Helpers for model-server tests: a fixed-reply HTTP upstream and the session id inside a session cookie."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from starlette.types import Receive, Scope, Send

from rewardgym.launch.serve import ThreadedServer

VLLM_OVERFLOW = (
    b'{"object": "error", "message": "This model\'s maximum context length is 4096 tokens. However, you '
    b'requested 5000 tokens in the messages.", "type": "BadRequestError", "code": 400}'
)
"""vLLM's context-overflow answer (HTTP 400)."""


class FixedReply:
    """A bare ASGI upstream answering every POST with one status and body; it records the JSON bodies."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.body = body
        self.requests: list[dict[str, Any]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        if scope["method"] == "POST":
            self.requests.append({"path": scope["path"], "json": orjson.loads(b"".join(chunks))})
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


@contextmanager
def fixed_upstream(status: int, body: bytes) -> Iterator[tuple[str, FixedReply]]:
    """Serve a :class:`FixedReply` on a real 127.0.0.1 port; yields ``(base_url ending in /v1, app)``."""
    app = FixedReply(status, body)
    runner = ThreadedServer(app, name="fixed-upstream").start()
    try:
        yield f"{runner.url}/v1", app
    finally:
        runner.stop()


def session_id_of(cookie: str) -> str:
    """The ``session_id`` inside a Starlette session cookie (``base64(json).timestamp.signature``)."""
    payload = cookie.strip('"').split(".", 1)[0]
    data = orjson.loads(base64.b64decode(payload + "=" * (-len(payload) % 4)))
    return str(data["session_id"])
