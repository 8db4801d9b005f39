"""A scripted model: a real, fast OpenAI-compatible upstream that answers from a script and records what it
receives (``rewardgym.testing`` re-exports it; the ``scripted_model`` pytest fixture starts one per test).

Run it as a process (``python -m rewardgym.testing.stub_server --port P [--mode M] [--text T]``) or with
:func:`start_stub` (a real 127.0.0.1 port). An environment author who needs *a model* rather than an upstream
uses the ``scripted`` model type (:mod:`rewardgym.models.scripted`: ``--model-type scripted``), which answers
in the model server's own process. It is a bare ASGI app (no framework) so that an answer costs well
under 0.5 ms; it is also the benchmark upstream.

Endpoints:
- ``POST /v1/responses``, ``POST /v1/chat/completions``: answer according to the current mode;
- ``GET /v1/models``: ``{"object": "list", "data": [{"id": <model>}]}``;
- ``GET /_requests``: the recorded requests ``[{method, path, headers, json}]``; ``DELETE /_requests`` clears;
- ``POST /_control``: change the behaviour at run time with any of the :class:`StubState` fields.

Modes (``mode``):
- ``answer``: a final assistant message with ``text`` (default ``\\boxed{B}``);
- ``echo``: a final message repeating the last user text;
- ``tool_then_answer``: a ``function_call`` of ``tool_name`` with ``tool_args`` unless the input already ends
  with a ``function_call_output``, then the ``text`` answer;
- ``script``: pops the next entry of ``script`` (a dict merged over the default response, e.g.
  ``{"output": [...], "usage": {...}, "incomplete_details": {...}}``); falls back to ``answer`` when empty.
Faults (checked first): ``fail_times`` > 0 answers ``fail_status`` (with ``retry_after`` if set) and counts
down; mode ``status`` always answers ``fail_status``; ``hang`` never answers; ``garbage`` answers 200 with
malformed JSON; ``wrong_shape`` answers 200 with JSON that is not a response.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from collections import deque
from dataclasses import dataclass, field, fields
from typing import Any

import orjson
import uvicorn
from starlette.types import Receive, Scope, Send

from rewardgym.launch.serve import ThreadedServer

_ids = itertools.count(1)


@dataclass
class StubState:
    mode: str = "answer"
    text: str = "\\boxed{B}"
    model: str = "stub-model"
    tool_name: str = "get_weather"
    tool_args: str = '{"city": "SF"}'
    script: list[dict[str, Any]] = field(default_factory=list)
    fail_times: int = 0
    fail_status: int = 503
    retry_after: str | None = None
    record: bool = True


def _tokens(value: Any) -> int:
    return max(1, len(orjson.dumps(value)) // 4)


def _last_text(items: Any) -> str:
    if isinstance(items, str):
        return items
    for item in reversed(items or []):
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))
    return ""


def _message(text: str) -> dict[str, Any]:
    return {
        "id": f"msg_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


class OpenAIStub:
    """The ASGI app; ``state`` and ``requests`` are inspectable in-process."""

    def __init__(self, state: StubState | None = None) -> None:
        self.state = state or StubState()
        self.requests: deque[dict[str, Any]] = deque(maxlen=10_000)
        self.released = False
        """Set to end every hanging request (e.g. before stopping the stub)."""

    # ---------------------------------------------------------------- answers
    def _output_items(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Output items for a Responses-style input, plus fields to merge over the response."""
        state = self.state
        items = body.get("input")
        if state.mode == "script" and state.script:
            entry = dict(state.script.pop(0))
            return entry.pop("output", []), entry
        if state.mode == "echo":
            return [_message(_last_text(items))], {}
        if state.mode == "tool_then_answer":
            last = items[-1] if isinstance(items, list) and items else {}
            if not (isinstance(last, dict) and last.get("type") == "function_call_output"):
                n = next(_ids)
                call = {
                    "id": f"fc_{n}",
                    "type": "function_call",
                    "call_id": f"call_{n}",
                    "name": state.tool_name,
                    "arguments": state.tool_args,
                    "status": "completed",
                }
                return [call], {}
        return [_message(state.text)], {}

    def responses(self, body: dict[str, Any]) -> dict[str, Any]:
        output, extra = self._output_items(body)
        in_tokens, out_tokens = _tokens(body.get("input")), _tokens(output)
        response: dict[str, Any] = {
            "id": f"resp_{next(_ids)}",
            "object": "response",
            "created_at": time.time(),
            "model": body.get("model") or self.state.model,
            "status": "completed",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": in_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": out_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": in_tokens + out_tokens,
            },
        }
        response.update(extra)
        return response

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        as_input = [
            {"type": "function_call_output"} if m.get("role") == "tool" else m
            for m in messages
            if isinstance(m, dict)
        ]
        output, _ = self._output_items({"input": as_input})
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "stop"
        for item in output:
            if item.get("type") == "function_call":
                call = {"name": item["name"], "arguments": item["arguments"]}
                message.setdefault("tool_calls", []).append(
                    {"id": item["call_id"], "type": "function", "function": call}
                )
                finish = "tool_calls"
            elif item.get("type") == "message":
                message["content"] = "".join(p.get("text", "") for p in item.get("content", []))
        prompt, completion = _tokens(messages), _tokens(message)
        return {
            "id": f"chatcmpl-{next(_ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.state.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    # ---------------------------------------------------------------- ASGI plumbing
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw = b"".join(chunks)
        method, path = scope["method"], scope["path"]
        status, payload, headers = await self._route(method, path, raw, scope)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    async def _route(self, method: str, path: str, raw: bytes, scope: Scope) -> tuple[int, bytes, list[Any]]:
        json_headers = [(b"content-type", b"application/json")]
        if path == "/_requests":
            if method == "DELETE":
                self.requests.clear()
            return 200, orjson.dumps(list(self.requests)), json_headers
        if path == "/_control" and method == "POST":
            updates = orjson.loads(raw or b"{}")
            names = {f.name for f in fields(StubState)}
            for key, value in updates.items():
                if key in names:
                    setattr(self.state, key, value)
            return 200, b"{}", json_headers
        if path in ("/v1/models", "/models") and method == "GET":
            return (
                200,
                orjson.dumps({"object": "list", "data": [{"id": self.state.model, "object": "model"}]}),
                json_headers,
            )
        if method != "POST" or path not in (
            "/v1/responses",
            "/responses",
            "/v1/chat/completions",
            "/chat/completions",
        ):
            return 404, b'{"error": {"message": "not found"}}', json_headers
        try:
            body = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            return 400, b'{"error": {"message": "invalid json"}}', json_headers
        state = self.state
        if state.record:
            wanted = (b"authorization", b"cookie", b"x-rewardgym-token")
            heads = {k.decode(): v.decode() for k, v in scope["headers"] if k in wanted}
            self.requests.append({"method": method, "path": path, "headers": heads, "json": body})
        if state.fail_times > 0 or state.mode == "status":
            state.fail_times = max(0, state.fail_times - 1)
            extra = [(b"retry-after", state.retry_after.encode())] if state.retry_after else []
            error = {"error": {"message": f"stub failure {state.fail_status}", "type": "stub"}}
            return state.fail_status, orjson.dumps(error), json_headers + extra
        if state.mode == "hang":
            deadline = time.monotonic() + 3600
            while not self.released and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return 503, b'{"error": {"message": "released"}}', json_headers
        if state.mode == "garbage":
            return 200, b'{"id": "resp_1", "output": [', json_headers
        if state.mode == "wrong_shape":
            return 200, b'{"hello": "world"}', json_headers
        answer = self.chat(body) if "chat" in path else self.responses(body)
        return 200, orjson.dumps(answer), json_headers


def start_stub(state: StubState | None = None, *, port: int = 0) -> tuple[ThreadedServer, OpenAIStub]:
    """Serve a stub in a background thread on a real 127.0.0.1 port; returns (runner, app)."""
    app = OpenAIStub(state)
    runner = ThreadedServer(app, port=port, name="openai-stub").start()
    return runner, app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mode", default="answer")
    parser.add_argument("--text", default="\\boxed{B}")
    parser.add_argument("--no-record", action="store_true", help="do not record requests (benchmarks)")
    args = parser.parse_args(argv)
    app = OpenAIStub(StubState(mode=args.mode, text=args.text, record=not args.no_record))
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        loop="uvloop",
        http="httptools",
    )
