"""Request bodies for upstreams that speak the Responses API natively (no translation).

Contract:
- :func:`build_openai_request` (``openai_model``, docs/reference/contract.md §7.3):
  ``extra_body | dump(params)`` — the request's own fields win — with ``model = openai_model``; with
  ``drop_input_reasoning_items`` the input items of type ``reasoning`` are removed. The body goes to
  ``POST {openai_base_url}/responses``.
- :func:`build_openai_chat_request`: the same for a Chat Completions body (``/chat/completions``).
- :func:`build_native_responses_request` (``vllm_model`` with ``is_responses_native``,
  docs/reference/environments.md §2.7):
  ``dump(params)`` with ``model``, ``chat_template_kwargs`` added, ``extra_body`` under and
  ``sampling_overrides`` last.
- :func:`parse_response` validates an upstream Responses reply, raising
  :class:`~rewardgym.models.errors.UpstreamReplyError` (never a half-valid object).
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import ValidationError

from rewardgym.models.chat_prepare import metadata_json
from rewardgym.models.config import ChatAdapterConfig, OpenAIModelConfig
from rewardgym.models.errors import UpstreamReplyError
from rewardgym.protocol.responses import Response, ResponseCreateParams, dump


def _copied(extra: dict[str, Any] | None) -> dict[str, Any]:
    """A deep copy of a configured ``extra_body`` (a caller may change the body); none made when it is
    empty, the usual case: ``copy.deepcopy`` of ``{}`` is still ≈ 2 µs on every model call."""
    return copy.deepcopy(extra) if extra else {}


def build_openai_request(params: ResponseCreateParams, config: OpenAIModelConfig) -> dict[str, Any]:
    """The ``/responses`` body for ``openai_model``."""
    body: dict[str, Any] = {**_copied(config.extra_body), **dump(params)}
    body["model"] = config.openai_model
    if config.drop_input_reasoning_items and isinstance(body.get("input"), list):
        body["input"] = [item for item in body["input"] if item.get("type") != "reasoning"]
    return body


def build_openai_chat_request(body: dict[str, Any], config: OpenAIModelConfig) -> dict[str, Any]:
    """The ``/chat/completions`` body for ``openai_model`` (``extra_body`` under, model replaced)."""
    return {**_copied(config.extra_body), **body, "model": config.openai_model}


def build_native_responses_request(params: ResponseCreateParams, config: ChatAdapterConfig) -> dict[str, Any]:
    """The ``/responses`` body for a Responses-native vLLM upstream."""
    body: dict[str, Any] = {**dump(params), "model": config.model}
    template_kwargs = {
        **(config.chat_template_kwargs or {}),
        **metadata_json(params.metadata, "chat_template_kwargs"),
    }
    if template_kwargs:
        body["chat_template_kwargs"] = template_kwargs
    extra = copy.deepcopy(config.extra_body or {})
    extra.update(metadata_json(params.metadata, "extra_body"))
    body = {**extra, **body}
    body.update(copy.deepcopy(config.sampling_overrides or {}))
    return body


def parse_response(payload: Any) -> Response:
    """Validate an upstream Responses API reply."""
    try:
        return Response.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "<root>"
        raise UpstreamReplyError(f"upstream reply is not a Response: {where}: {first['msg']}") from None
