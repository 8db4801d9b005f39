"""Server-sent-event replays of complete results, for clients that asked for ``stream: true``.

Model servers compute the whole result first and then replay it as the event sequence the OpenAI APIs use:

- Responses API (:func:`response_events`): ``response.created``, ``response.in_progress``; per output item
  ``response.output_item.added``, for messages ``response.content_part.added`` /
  ``response.output_text.delta`` / ``response.output_text.done`` / ``response.content_part.done``, for
  function calls ``response.function_call_arguments.delta`` / ``…done``; ``response.output_item.done``; and
  finally ``response.completed`` (or ``response.incomplete``) carrying the full response. Every event has a
  ``sequence_number``; items lacking an ``id`` get a generated one.
- Chat Completions (:func:`chat_events`): ``chat.completion.chunk`` objects (role, content, reasoning and
  tool-call deltas, then the ``finish_reason``; a usage chunk when ``include_usage``), then ``[DONE]``.

Both return the complete ``text/event-stream`` body as bytes.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from typing import Any

import orjson

_ID_PREFIX = {"message": "msg", "function_call": "fc", "reasoning": "rs", "function_call_output": "fco"}


def _frame(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + orjson.dumps(data) + b"\n\n"


def _item_events(index: int, item: dict[str, Any]) -> Iterator[dict[str, Any]]:
    kind = item.get("type", "message")
    item_id = item["id"]
    pending = {**item, "status": "in_progress"}
    if kind == "message":
        pending["content"] = []
    elif kind == "function_call":
        pending["arguments"] = ""
    yield {"type": "response.output_item.added", "output_index": index, "item": pending}
    if kind == "message" and isinstance(item.get("content"), list):
        for c_index, part in enumerate(item["content"]):
            where = {"item_id": item_id, "output_index": index, "content_index": c_index}
            if part.get("type") == "output_text":
                empty = {**part, "text": ""}
                yield {"type": "response.content_part.added", **where, "part": empty}
                yield {
                    "type": "response.output_text.delta",
                    **where,
                    "delta": part.get("text", ""),
                    "logprobs": [],
                }
                yield {
                    "type": "response.output_text.done",
                    **where,
                    "text": part.get("text", ""),
                    "logprobs": [],
                }
            else:
                yield {"type": "response.content_part.added", **where, "part": part}
            yield {"type": "response.content_part.done", **where, "part": part}
    elif kind == "function_call":
        where = {"item_id": item_id, "output_index": index}
        arguments = item.get("arguments", "")
        yield {"type": "response.function_call_arguments.delta", **where, "delta": arguments}
        yield {"type": "response.function_call_arguments.done", **where, "arguments": arguments}
    yield {"type": "response.output_item.done", "output_index": index, "item": item}


def response_events(response: dict[str, Any]) -> bytes:
    """The Responses-API event stream replaying the complete ``response`` (a JSON dict)."""
    final = copy.deepcopy(response)
    for item in final.get("output", []):
        if not item.get("id"):
            item["id"] = f"{_ID_PREFIX.get(item.get('type', 'message'), 'item')}_{uuid.uuid4().hex}"
    final.setdefault("status", "completed")
    started = {**final, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    for index, item in enumerate(final.get("output", [])):
        events.extend(_item_events(index, item))
    last = "response.incomplete" if final.get("status") == "incomplete" else "response.completed"
    events.append({"type": last, "response": final})
    out = bytearray()
    for number, event in enumerate(events):
        event["sequence_number"] = number
        out += _frame(event["type"], event)
    return bytes(out)


def chat_events(completion: dict[str, Any], *, include_usage: bool = False) -> bytes:
    """The Chat-Completions chunk stream replaying the complete ``completion`` (a JSON dict), then [DONE]."""
    base = {
        "id": completion.get("id", f"chatcmpl-{uuid.uuid4().hex}"),
        "object": "chat.completion.chunk",
        "created": completion.get("created", 0),
        "model": completion.get("model", ""),
    }
    out = bytearray()

    def chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> None:
        choice = {"index": index, "delta": delta, "finish_reason": finish, "logprobs": None}
        out.extend(_frame(None, {**base, "choices": [choice]}))

    for choice in completion.get("choices", []):
        index = choice.get("index", 0)
        message = choice.get("message", {})
        chunk(index, {"role": message.get("role", "assistant"), "content": ""})
        if message.get("reasoning_content"):
            chunk(index, {"reasoning_content": message["reasoning_content"]})
        if message.get("content"):
            chunk(index, {"content": message["content"]})
        for t_index, call in enumerate(message.get("tool_calls") or []):
            chunk(index, {"tool_calls": [{"index": t_index, **call}]})
        chunk(index, {}, choice.get("finish_reason") or "stop")
    if include_usage and completion.get("usage") is not None:
        out.extend(_frame(None, {**base, "choices": [], "usage": completion["usage"]}))
    out.extend(b"data: [DONE]\n\n")
    return bytes(out)
