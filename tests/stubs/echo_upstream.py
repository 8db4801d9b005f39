"""A real OpenAI-compatible upstream that refuses every completion and echoes the credential it received.

Real providers quote the key they got in their error message; this stub does it in every encoding a body
can carry it, so a test can check that none of them survives rewardgym's redaction:

- ``error.message``: ``Incorrect API key provided: <key>`` — the body is written by orjson, so the key is
  JSON-escaped (``\\"``, ``\\\\``) with non-ASCII characters raw;
- ``error.detail``: a string holding ``json.dumps({"key": key})`` (ASCII-escaped ``\\u00e9``, and escaped
  once more by the outer body);
- ``error.param``: the key URL-encoded (``quote_plus``).

With ``status=200`` the stub answers every completion normally instead, its answer text quoting the key in
the same encodings (an upstream that echoes a key in a normal answer: it must not reach ``rollouts.jsonl``).

The key is read from ``Authorization: Bearer …`` (or ``X-Rewardgym-Token``) as UTF-8, which is how both
of rewardgym's transports send header values. ``GET …/models`` answers normally (so start-up readiness
passes); ``received`` keeps the raw header bytes so a test can prove the key really reached the wire.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote_plus

import orjson

Scope = dict[str, Any]


class EchoCredentialUpstream:
    """The ASGI app (``status``: the status of every refused call; 400 is final, not an auth stop)."""

    def __init__(self, status: int = 400) -> None:
        self.status = status
        self.received: list[bytes] = []

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # served with lifespan off
            return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        headers = [(b"content-type", b"application/json")]
        if scope["method"] == "GET" and scope["path"].endswith("/models"):
            body = orjson.dumps({"object": "list", "data": [{"id": "stub-model", "object": "model"}]})
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        raw = dict(scope["headers"]).get(b"authorization", b"").removeprefix(b"Bearer ")
        self.received.append(raw)
        key = raw.decode("utf-8", "replace")
        if self.status == 200:
            text = f"\\boxed{{B}} (key {key}; {json.dumps({'key': key})}; {quote_plus(key)})"
            answer = {
                "id": "chatcmpl-echo", "object": "chat.completion", "created": 0, "model": "stub-model",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }  # fmt: skip
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": orjson.dumps(answer)})
            return
        error = {
            "message": f"Incorrect API key provided: {key}",
            "detail": json.dumps({"key": key}),
            "param": quote_plus(key),
            "type": "invalid_request_error",
        }
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": orjson.dumps({"error": error})})
