"""``vllm_model``: the Responses API in front of any OpenAI-compatible ``/chat/completions`` server.

Config: :class:`VLLMModelServerConfig` = the server fields (``host``, ``port``, ``http`` timeouts and
retries, ``log_dir`` …) + :class:`~rewardgym.models.config.VLLMModelConfig` (``base_url``, ``api_key``,
``model``, the adapter switches). Unknown keys are errors naming the field.

Behaviour (:mod:`rewardgym.models.chat_server` for the shared part):
- ``base_url`` may be a list of replicas: every call of one session (the model server's session cookie)
  goes to replica ``sha256(session_id)[:8] (big-endian) mod N`` (docs/reference/environments.md §2.1).
- ``api_key`` is sent as ``Authorization: Bearer`` to the upstream only (never logged or echoed), with
  ``default_headers``. ``max_concurrent_requests`` bounds in-flight upstream calls.
- ``is_responses_native: true`` forwards ``/v1/responses`` to ``{base_url}/responses`` without translation
  (:func:`~rewardgym.models.passthrough.build_native_responses_request`); the reply must be a valid
  Response (else 502).
"""

from __future__ import annotations

from typing import Any

from rewardgym.models.chat_adapter import context_overflow_response
from rewardgym.models.chat_server import ChatModelServer, ChatServerConfig
from rewardgym.models.config import VLLMModelConfig
from rewardgym.models.errors import UpstreamReplyError
from rewardgym.models.passthrough import build_native_responses_request, parse_response
from rewardgym.models.upstream import bad_reply, sticky_index, upstream_headers
from rewardgym.protocol import Response, ResponseCreateParams
from rewardgym.registry import register
from rewardgym.servers.model import CallContext


class VLLMModelServerConfig(VLLMModelConfig, ChatServerConfig):
    """Settings of a ``vllm_model`` instance (server fields + :class:`VLLMModelConfig`)."""


@register("responses_api_models", "vllm_model")
class VLLMModel(ChatModelServer[VLLMModelServerConfig]):
    """Responses API ⇄ Chat Completions adapter in front of vLLM, llama.cpp or any compatible server."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self._urls = self.config.base_urls()
        self.headers = upstream_headers(self.config.api_key, self.config.default_headers)

    def max_concurrent_requests(self) -> int | None:
        return self.config.max_concurrent_requests

    def upstream_base(self, ctx: CallContext) -> str:
        return self._urls[sticky_index(ctx.session_id, len(self._urls))]

    async def responses(self, params: ResponseCreateParams, ctx: CallContext) -> Response:
        if not self.config.is_responses_native:
            return await super().responses(params, ctx)
        url = self.upstream_base(ctx) + "/responses"
        reply = await self.post_upstream(url, build_native_responses_request(params, self.config))
        if reply is None:
            return context_overflow_response(params, self.config)
        try:
            return parse_response(reply.json())
        except UpstreamReplyError as exc:
            raise bad_reply(url, exc) from None
