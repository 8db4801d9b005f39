"""``openai_model``: the pass-through model server in front of a native Responses API
(docs/reference/contract.md §7.3).

Config: :class:`OpenAIModelServerConfig` = the server fields (``host``, ``port``, ``http`` timeouts and
retries, ``log_dir`` …) + :class:`~rewardgym.models.config.OpenAIModelConfig` (``openai_base_url``,
``openai_api_key``, ``openai_model``, ``extra_body``, ``openai_default_headers``,
``max_concurrent_requests``, ``drop_input_reasoning_items``). Unknown keys are errors naming the field.

Behaviour:
- ``/v1/responses`` → ``POST {openai_base_url}/responses`` with
  :func:`~rewardgym.models.passthrough.build_openai_request` (``extra_body`` under the request's own fields,
  ``model = openai_model``, reasoning input items dropped if configured). No translation: the upstream must
  speak the Responses API.
- ``/v1/chat/completions`` → ``POST {openai_base_url}/chat/completions`` with
  :func:`~rewardgym.models.passthrough.build_openai_chat_request`.
- The reply must validate as a Response / ChatCompletion; anything else (HTML, truncated JSON, a wrong
  shape) is a 502 naming the upstream URL — never passed on. Upstream error statuses → 502 (after the retries
  of :func:`~rewardgym.models.upstream.llm_retry_statuses`), no reply in time → 504.
- The API key is sent as ``Authorization: Bearer`` to the upstream only; it is never logged or echoed.
  ``max_concurrent_requests`` bounds in-flight upstream calls.
"""

from __future__ import annotations

from typing import Any

from rewardgym.http.client import HttpReply
from rewardgym.models.config import OpenAIModelConfig
from rewardgym.models.passthrough import build_openai_chat_request, build_openai_request
from rewardgym.models.upstream import concurrency_limit, llm_retry_statuses, upstream_headers
from rewardgym.protocol import ChatCompletion, ChatCompletionCreateParams, Response, ResponseCreateParams
from rewardgym.registry import register
from rewardgym.servers.config import ServerConfig
from rewardgym.servers.model import CallContext, ModelServer


class OpenAIModelServerConfig(ServerConfig, OpenAIModelConfig):
    """Settings of an ``openai_model`` instance (server fields + :class:`OpenAIModelConfig`)."""


@register("responses_api_models", "openai_model")
class OpenAIModel(ModelServer[OpenAIModelServerConfig]):
    """Pass-through to an upstream that speaks the OpenAI Responses API natively."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        cfg = self.config
        self._base = cfg.openai_base_url
        self._headers = upstream_headers(cfg.openai_api_key, cfg.openai_default_headers)
        self._retry_statuses = llm_retry_statuses(cfg.http)
        self._limit = concurrency_limit(cfg.max_concurrent_requests)

    def model_ids(self) -> list[str]:
        return [self.config.openai_model]

    async def _post(self, path: str, body: dict[str, Any]) -> HttpReply:
        async with self._limit:
            return await self.http.post(
                self._base + path, json=body, headers=self._headers, retry_statuses=self._retry_statuses
            )

    async def responses(self, params: ResponseCreateParams, ctx: CallContext) -> Response:
        reply = await self._post("/responses", build_openai_request(params, self.config))
        return reply.parse(Response)

    async def chat_completions(self, params: ChatCompletionCreateParams, ctx: CallContext) -> ChatCompletion:
        body = build_openai_chat_request(params.model_dump(mode="json", exclude_unset=True), self.config)
        reply = await self._post("/chat/completions", body)
        return reply.parse(ChatCompletion)
