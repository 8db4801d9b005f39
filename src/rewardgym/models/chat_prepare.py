"""Config-dependent shaping of a translated Chat Completions body (docs/reference/environments.md §2.3).

Contract of :func:`prepare_chat_body`, applied in this order to the output of
:func:`~rewardgym.models.chat_request.responses_to_chat`:

1. ``developer`` → ``system`` when ``replace_developer_role_with_system``.
2. Reasoning history (when ``uses_reasoning_parser`` and not ``preserve_reasoning_in_assistant_content``):
   every ``<think>…</think>`` block is removed from assistant content; with ``uses_interleaved_reasoning``
   the FIRST block's text is sent as both ``reasoning_content`` and ``reasoning``, else it is dropped.
3. Tool-call emulation through a JSON schema when ``tool_calls_via_json_schema`` and tools are given
   (:mod:`rewardgym.models.json_tools`).
4. ``model = config.model``.
5. ``chat_template_kwargs`` = config values updated by the row's ``metadata.chat_template_kwargs`` (a JSON
   object in a string; the row wins); set only when non-empty.
6. ``extra_body`` = config values updated by the row's ``metadata.extra_body`` (JSON string; the row wins),
   merged UNDER the body: the request's own fields win (this is how per-rollout ``seed`` s arrive).
7. A ``top_logprobs`` of null is removed; ``sampling_overrides`` are applied last and beat everything.

The input body is never mutated. Bad metadata JSON raises
:class:`~rewardgym.models.errors.UnsupportedRequestError` naming ``metadata.<key>``.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any

from rewardgym.models import json_tools
from rewardgym.models.config import ChatAdapterConfig
from rewardgym.models.errors import UnsupportedRequestError
from rewardgym.protocol.responses import ResponseCreateParams

ChatDict = dict[str, Any]

THINK_RE = re.compile(r"<think>(.*?)</think>", re.DOTALL)
"""A reasoning block in message text (non-greedy, across lines)."""


def metadata_json(metadata: Mapping[str, Any] | None, key: str) -> dict[str, Any]:
    """The JSON object stored as a string under ``metadata[key]`` (empty when absent or blank)."""
    raw = (metadata or {}).get(key)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, dict):
        return dict(raw)
    if not isinstance(raw, str):
        raise UnsupportedRequestError(f"metadata.{key} must be a JSON object in a string")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UnsupportedRequestError(f"metadata.{key} is not valid JSON ({exc.msg}): {raw[:80]!r}") from None
    if not isinstance(value, dict):
        raise UnsupportedRequestError(f"metadata.{key} must be a JSON object, got {type(value).__name__}")
    return value


def _move_reasoning(message: ChatDict, interleaved: bool) -> ChatDict:
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, str):
        return message
    found = THINK_RE.findall(content)
    if not found:
        return message
    moved = {**message, "content": THINK_RE.sub("", content)}
    if interleaved:
        moved["reasoning_content"] = found[0]
        moved["reasoning"] = found[0]
    return moved


def prepare_messages(messages: list[ChatDict], config: ChatAdapterConfig) -> list[ChatDict]:
    """Steps 1-2: developer → system and the reasoning history; returns new message dicts."""
    out = [dict(m) for m in messages]
    if config.replace_developer_role_with_system:
        out = [{**m, "role": "system"} if m.get("role") == "developer" else m for m in out]
    if config.uses_reasoning_parser and not config.preserve_reasoning_in_assistant_content:
        out = [_move_reasoning(m, config.uses_interleaved_reasoning) for m in out]
    return out


def apply_body_config(
    body: ChatDict, metadata: Mapping[str, Any] | None, config: ChatAdapterConfig
) -> ChatDict:
    """Steps 4-7: model, chat_template_kwargs, extra_body (under), null top_logprobs, sampling_overrides."""
    out: ChatDict = {**body, "model": config.model}
    template_kwargs = dict(config.chat_template_kwargs or {})
    template_kwargs.update(metadata_json(metadata, "chat_template_kwargs"))
    if template_kwargs:
        out["chat_template_kwargs"] = template_kwargs
    extra = copy.deepcopy(config.extra_body or {})
    extra.update(metadata_json(metadata, "extra_body"))
    out = {**extra, **out}
    if "top_logprobs" in out and out["top_logprobs"] is None:
        del out["top_logprobs"]
    out.update(copy.deepcopy(config.sampling_overrides or {}))
    return out


def prepare_chat_body(body: ChatDict, params: ResponseCreateParams, config: ChatAdapterConfig) -> ChatDict:
    """Apply the config (and the row's metadata) to a translated chat body; returns a new dict."""
    out: ChatDict = {**body, "messages": prepare_messages(list(body.get("messages") or []), config)}
    if config.tool_calls_via_json_schema and params.tools:
        out = json_tools.rewrite_request(out, params)
    return apply_body_config(out, params.metadata, config)


def sequential_reasoning_blocked(body: ChatDict, config: ChatAdapterConfig) -> bool:
    """True when ``sequential_reasoning_allowed`` is off and the history ends in an empty assistant turn.

    The server then answers locally with :func:`~rewardgym.models.chat_response.empty_completion`
    (``finish_reason="content_filter"``) instead of calling the upstream
    (docs/reference/environments.md §2.5).
    """
    if config.sequential_reasoning_allowed:
        return False
    messages = body.get("messages") or []
    if not messages:
        return False
    last = messages[-1]
    return last.get("role") == "assistant" and not last.get("content") and not last.get("tool_calls")
