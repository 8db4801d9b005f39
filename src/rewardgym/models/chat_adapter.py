"""The Responses ⇄ Chat Completions adapter of ``vllm_model`` / ``embedded_model``, as pure functions.

A model server is a thin shell around these (no I/O here)::

    body = build_chat_request(params, config)            # POST {base_url}/chat/completions with body
    if sequential_reasoning_blocked(body, config):       # short-cut: docs/reference/environments.md §2.5
        return chat_to_response(empty_completion(config.model, "content_filter"), params, config)
    ...on HTTP 200:  return build_response(reply_json, params, config)
    ...on an error:  if is_context_overflow(status, text): return context_overflow_response(params, config)

``POST /v1/chat/completions`` on the model server forwards :func:`build_chat_passthrough` of the body.

Request translation (docs/reference/environments.md §2.2, §2.3): :mod:`rewardgym.models.chat_request` then
:mod:`rewardgym.models.chat_prepare` and, for upstreams without tool support,
:mod:`rewardgym.models.json_tools`.
Reply translation (docs/reference/environments.md §2.4): :mod:`rewardgym.models.chat_response`.
"""

from __future__ import annotations

from typing import Any

from rewardgym.models.chat_prepare import (
    apply_body_config,
    metadata_json,
    prepare_chat_body,
    prepare_messages,
    sequential_reasoning_blocked,
)
from rewardgym.models.chat_request import responses_to_chat
from rewardgym.models.chat_response import (
    chat_to_response,
    context_overflow_response,
    empty_completion,
    is_context_overflow,
    map_usage,
    parse_chat_completion,
)
from rewardgym.models.config import ChatAdapterConfig
from rewardgym.protocol.responses import Response, ResponseCreateParams

__all__ = [
    "build_chat_passthrough",
    "build_chat_request",
    "build_response",
    "chat_to_response",
    "context_overflow_response",
    "empty_completion",
    "is_context_overflow",
    "map_usage",
    "metadata_json",
    "parse_chat_completion",
    "responses_to_chat",
    "sequential_reasoning_blocked",
]


def build_chat_request(params: ResponseCreateParams, config: ChatAdapterConfig) -> dict[str, Any]:
    """The complete upstream ``/chat/completions`` body for a Responses request (JSON-ready)."""
    return prepare_chat_body(responses_to_chat(params), params, config)


def build_response(payload: Any, params: ResponseCreateParams, config: ChatAdapterConfig) -> Response:
    """The Response for an upstream's JSON reply to :func:`build_chat_request` (raises on a bad reply)."""
    return chat_to_response(parse_chat_completion(payload, model=config.model), params, config)


def build_chat_passthrough(body: dict[str, Any], config: ChatAdapterConfig) -> dict[str, Any]:
    """A caller's own Chat Completions body made ready for the upstream.

    Same docs/reference/environments.md §2.3 steps as the Responses path (developer → system, reasoning
    history, model, template kwargs, ``extra_body`` under the body, overrides last) but no tool emulation:
    tools are forwarded as given.
    """
    messages = body.get("messages")
    shaped = {**body, "messages": prepare_messages(list(messages), config)} if messages else dict(body)
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else None
    return apply_body_config(shaped, metadata, config)
