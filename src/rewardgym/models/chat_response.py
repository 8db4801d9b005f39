"""Chat Completion → Responses ``Response`` (docs/reference/environments.md §2.4), plus the locally
built replies.

Contract of :func:`chat_to_response` (first choice only):
- Reasoning: with ``uses_reasoning_parser`` a ``reasoning_content``/``reasoning`` field is re-wrapped as
  ``<think>…</think>`` in front of the content; then ALL ``<think>`` blocks are cut out of the content (which
  is not stripped) and become ONE ``reasoning`` item with one ``summary_text`` per block. Without the
  parser, reasoning fields are an upstream error and ``<think>`` text stays in the message.
- Item order: the reasoning item (``rs_<hex>``), then one assistant ``message`` (``msg_<hex>``, one
  ``output_text`` part) if the remaining text is non-empty OR there is neither reasoning nor a tool call
  (text ``""``), then one ``function_call`` per tool call with ``id = call_id = <tool call id>``.
- JSON-schema tool emulation (``tool_calls_via_json_schema`` and tools in the request): the reply text is
  decoded first (:func:`~rewardgym.models.json_tools.decode_tool_reply`).
- Usage: prompt/completion/total tokens → input/output/total; cached tokens from
  ``prompt_tokens_details.cached_tokens`` else ``cached_input_tokens`` else ``cache_read_input_tokens``;
  reasoning tokens from ``completion_tokens_details.reasoning_tokens`` else ``reasoning_output_tokens``;
  only non-negative integers count (else null). No usage → ``usage: null``.
- ``finish_reason`` ``length`` / ``content_filter`` → ``status: "incomplete"`` with
  ``incomplete_details.reason`` ``max_output_tokens`` / ``content_filter``; anything else → ``completed``.
- Envelope: ``id = resp_<uuid hex>``, ``created_at = created``, ``model = config.model``; the request's
  parameters (tools, tool_choice, temperature, metadata, instructions, …) are echoed.

A context-length HTTP 400 from the upstream (:func:`is_context_overflow`) is not an error: it becomes
:func:`context_overflow_response`, an ``incomplete`` Response holding one empty message.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from pydantic import ValidationError

from rewardgym.models import json_tools
from rewardgym.models.chat_prepare import THINK_RE
from rewardgym.models.chat_request import think
from rewardgym.models.config import ChatAdapterConfig
from rewardgym.models.errors import UpstreamReplyError
from rewardgym.protocol.chat import ChatChoice, ChatCompletion, ChatMessage, ChatUsage
from rewardgym.protocol.responses import Response, ResponseCreateParams, Usage

_ECHOED = (
    "background",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "parallel_tool_calls",
    "previous_response_id",
    "prompt",
    "reasoning",
    "service_tier",
    "store",
    "temperature",
    "text",
    "tool_choice",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
)
"""Request parameters copied into every Response."""

_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}

_OVERFLOW_MARKERS = ("context length", "max_tokens", "context size", "exceed_context_size_error")
"""Phrases of a context-overflow 400: vLLM ("maximum context length", "max_tokens") and llama.cpp
("exceeds the available context size", type ``exceed_context_size_error``)."""


def parse_chat_completion(payload: Any, *, model: str) -> ChatCompletion:
    """Validate an upstream JSON reply; missing ``id``/``created``/``model`` are filled, the rest must fit."""
    if not isinstance(payload, dict):
        raise UpstreamReplyError(f"upstream reply is not a JSON object: {str(payload)[:120]!r}")
    filled = {"id": "chatcmpl-unknown", "created": int(time.time()), "model": model, **payload}
    try:
        completion = ChatCompletion.model_validate(filled)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = f"upstream reply is not a chat completion: {where}: {first['msg']}"
        raise UpstreamReplyError(message) from None
    if not completion.choices:
        raise UpstreamReplyError("upstream reply has no choices")
    return completion


def empty_completion(model: str, finish_reason: str) -> ChatCompletion:
    """A completion with one empty assistant message (context overflow, blocked sequential reasoning)."""
    return ChatCompletion(
        id=f"chatcmpl-{uuid.uuid4().hex}",
        created=int(time.time()),
        model=model,
        choices=[ChatChoice(message=ChatMessage(role="assistant", content=""), finish_reason=finish_reason)],
    )


def is_context_overflow(status: int, body: str) -> bool:
    """Whether an upstream HTTP error means the prompt (plus ``max_tokens``) does not fit the context."""
    lowered = body.lower()
    return status == 400 and any(marker in lowered for marker in _OVERFLOW_MARKERS)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _first_count(*values: Any) -> int | None:
    for value in values:
        counted = _count(value)
        if counted is not None:
            return counted
    return None


def map_usage(usage: ChatUsage | None) -> Usage | None:
    """Chat Completions usage → Responses usage (with the cached/reasoning fallbacks)."""
    if usage is None:
        return None
    extra = usage.model_extra or {}
    prompt_details = usage.prompt_tokens_details
    completion_details = usage.completion_tokens_details
    cached = _first_count(
        prompt_details.cached_tokens if prompt_details else None,
        extra.get("cached_input_tokens"),
        extra.get("cache_read_input_tokens"),
    )
    reasoning = _first_count(
        completion_details.reasoning_tokens if completion_details else None,
        extra.get("reasoning_output_tokens"),
    )
    return Usage.model_validate(
        {
            "input_tokens": usage.prompt_tokens,
            "output_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens_details": {"reasoning_tokens": reasoning},
        }
    )


def _reasoning_field(message: ChatMessage) -> str | None:
    value = message.reasoning_content or (message.model_extra or {}).get("reasoning")
    return value if isinstance(value, str) and value else None


def _message_text(message: ChatMessage) -> str:
    content = message.content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return content or ""


def output_items(message: ChatMessage, config: ChatAdapterConfig) -> list[dict[str, Any]]:
    """The Responses output items (reasoning, message, function calls) for one chat assistant message."""
    text = _message_text(message)
    reasoning = _reasoning_field(message)
    summaries: list[str] = []
    if config.uses_reasoning_parser:
        if reasoning is not None:
            text = think(reasoning) + text
        summaries = THINK_RE.findall(text)
        text = THINK_RE.sub("", text)
    elif reasoning is not None:
        raise UpstreamReplyError(
            "upstream returned reasoning_content/reasoning but uses_reasoning_parser is false "
            "(set uses_reasoning_parser: true for this model)"
        )
    calls = message.tool_calls or []
    items: list[dict[str, Any]] = []
    if summaries:
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{uuid.uuid4().hex}",
                "status": "completed",
                "summary": [{"type": "summary_text", "text": s} for s in summaries],
            }
        )
    if text or (not summaries and not calls):
        items.append(
            {
                "type": "message",
                "id": f"msg_{uuid.uuid4().hex}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    items.extend(
        {
            "type": "function_call",
            "id": call.id,
            "call_id": call.id,
            "name": call.function.name,
            "arguments": call.function.arguments,
            "status": "completed",
        }
        for call in calls
    )
    return items


def _decode_json_tools(message: ChatMessage, params: ResponseCreateParams) -> ChatMessage:
    if message.tool_calls or not (message.content is None or isinstance(message.content, str)):
        return message
    text, calls = json_tools.decode_tool_reply(message.content, {tool.name for tool in params.tools})
    return ChatMessage.model_validate({**message.model_dump(), "content": text, "tool_calls": calls or None})


def chat_to_response(
    completion: ChatCompletion, params: ResponseCreateParams, config: ChatAdapterConfig
) -> Response:
    """Convert the upstream's chat completion into the Response for ``params`` (first choice only)."""
    if not completion.choices:
        raise UpstreamReplyError("upstream reply has no choices")
    choice = completion.choices[0]
    message = choice.message
    if json_tools.applies(params, config.tool_calls_via_json_schema):
        message = _decode_json_tools(message, params)
    reason = _INCOMPLETE.get(choice.finish_reason or "")
    usage = map_usage(completion.usage)
    body: dict[str, Any] = {
        "id": f"resp_{uuid.uuid4().hex}",
        "created_at": float(completion.created),
        "model": config.model,
        "object": "response",
        "output": output_items(message, config),
        "usage": usage.model_dump(mode="json") if usage is not None else None,
        "status": "incomplete" if reason else "completed",
        "incomplete_details": {"reason": reason} if reason else None,
        "error": None,
        "tools": [tool.model_dump(mode="json", exclude_unset=True) for tool in params.tools],
    }
    for name in _ECHOED:
        body[name] = getattr(params, name)
    return Response.model_validate(body)


def context_overflow_response(params: ResponseCreateParams, config: ChatAdapterConfig) -> Response:
    """The Response for a context-length 400: ``incomplete`` (max_output_tokens), one empty message."""
    return chat_to_response(empty_completion(config.model, "length"), params, config)
