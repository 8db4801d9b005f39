"""A real HTTP stub of a judge model server (aiohttp on 127.0.0.1) and a ``JudgePost`` that calls it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from rewardgym.environments.math_with_judge.judge import JudgePost
from rewardgym.protocol import Response, ResponseCreateParams, dump


def judge_reply(text: str, *, refusal: bool = False) -> dict[str, Any]:
    """A Responses API reply whose only output is a message with ``text`` (or a refusal part)."""
    part = (
        {"type": "refusal", "refusal": text}
        if refusal
        else {"type": "output_text", "text": text, "annotations": []}
    )
    return {
        "id": "resp_judge",
        "created_at": 0.0,
        "model": "judge",
        "object": "response",
        "output": [
            {"type": "message", "id": "msg_j", "role": "assistant", "status": "completed", "content": [part]}
        ],
    }


@dataclass
class JudgeStub:
    """Replies to ``POST /v1/responses`` with queued ``(status, json body)`` pairs and records requests."""

    replies: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append(await request.json())
        if not self.replies:
            return web.json_response({"error": "no reply queued"}, status=500)
        status, body = self.replies.pop(0)
        return web.json_response(body, status=status)


@asynccontextmanager
async def running_stub() -> AsyncIterator[JudgeStub]:
    """Serve a :class:`JudgeStub` on a free 127.0.0.1 port for the duration of the block."""
    stub = JudgeStub()
    app = web.Application()
    app.router.add_post("/v1/responses", stub.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    stub.url = f"http://{host}:{port}/v1/responses"
    try:
        yield stub
    finally:
        await runner.cleanup()


def http_post(session: aiohttp.ClientSession, url: str) -> JudgePost:
    """A ``JudgePost`` doing a plain JSON POST (non-2xx raises ``aiohttp.ClientResponseError``)."""

    async def post(params: ResponseCreateParams) -> Response:
        async with session.post(url, json=dump(params)) as reply:
            reply.raise_for_status()
            return Response.model_validate(await reply.json())

    return post
