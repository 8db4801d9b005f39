"""The shared model server in front of an OpenAI-compatible ``/chat/completions`` upstream.

:class:`ChatModelServer` is the body of ``vllm_model`` and ``embedded_model``; subclasses only say where the
upstream is (:meth:`ChatModelServer.upstream_base`) and how to authenticate (``self.headers``).

Contract:
- ``POST /v1/responses``: the request is translated with
  :func:`~rewardgym.models.chat_adapter.build_chat_request` (a request the adapter cannot translate → 400
  naming the field), sent to ``POST {base}/chat/completions`` and the reply converted with
  :func:`~rewardgym.models.chat_adapter.build_response`. With ``sequential_reasoning_allowed: false`` and a
  history ending in an empty assistant turn, the upstream is not called (``incomplete``/``content_filter``).
- ``POST /v1/chat/completions``: the caller's body made ready with
  :func:`~rewardgym.models.chat_adapter.build_chat_passthrough` (model replaced, ``extra_body`` under,
  ``sampling_overrides`` last) and the upstream's completion returned after validation.
- A context-length HTTP 400 from the upstream is not an error: the Responses path answers the empty
  ``incomplete`` response, the chat path an empty completion with ``finish_reason: length``.
- Calls go through ``self.http`` (pooled, timed out; retried on connection errors, timeouts and
  429/500/502/503/504 — :func:`~rewardgym.models.upstream.llm_retry_statuses`), at most
  ``max_concurrent_requests`` at a time. Other upstream statuses → 502 ``upstream_http_error``; a reply that
  is not JSON or not a chat completion → 502 ``upstream_bad_response``; no reply in time → 504.
- ``GET /v1/models`` lists ``config.model``.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from rewardgym.http.client import HttpReply
from rewardgym.http.errors import UpstreamHTTPError
from rewardgym.http.retry import parse_retry_after
from rewardgym.models.chat_adapter import (
    build_chat_passthrough,
    build_chat_request,
    build_response,
    chat_to_response,
    context_overflow_response,
    empty_completion,
    is_context_overflow,
    parse_chat_completion,
    sequential_reasoning_blocked,
)
from rewardgym.models.config import ChatAdapterConfig
from rewardgym.models.errors import UpstreamReplyError
from rewardgym.models.upstream import bad_reply, concurrency_limit, llm_retry_statuses
from rewardgym.protocol import ChatCompletion, ChatCompletionCreateParams, Response, ResponseCreateParams
from rewardgym.servers.config import ServerConfig
from rewardgym.servers.model import CallContext, ModelServer


class ChatServerConfig(ServerConfig, ChatAdapterConfig):
    """A server config (host, port, ``http`` timeouts/retries, …) plus the adapter settings."""


CC = TypeVar("CC", bound=ChatServerConfig)


class ChatModelServer(ModelServer[CC]):
    """Responses API (and Chat Completions pass-through) in front of a ``/chat/completions`` upstream."""

    config_class: ClassVar[type[ServerConfig]] = ChatServerConfig

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.headers: dict[str, str] = {}
        """Headers sent with every upstream call (subclasses add authentication)."""
        self._retry_statuses = llm_retry_statuses(self.config.http)
        self._limit = concurrency_limit(self.max_concurrent_requests())

    # -- what subclasses decide --------------------------------------------------------------------------
    def upstream_base(self, ctx: CallContext) -> str:
        """The upstream base URL (ending in ``/v1``) that serves this call."""
        raise NotImplementedError

    def max_concurrent_requests(self) -> int | None:
        """Bound on simultaneous upstream calls (``None``: unbounded)."""
        return None

    def model_ids(self) -> list[str]:
        return [self.config.model]

    # -- the upstream call --------------------------------------------------------------------------------
    async def post_upstream(self, url: str, body: dict[str, Any]) -> HttpReply | None:
        """POST ``body``; the 2xx reply, ``None`` for a context overflow, else :class:`UpstreamHTTPError`."""
        async with self._limit:
            reply = await self.http.post(
                url,
                json=body,
                headers=self.headers,
                raise_for_status=False,
                retry_statuses=self._retry_statuses,
            )
        if reply.ok:
            return reply
        if is_context_overflow(reply.status, reply.text()):
            self.log.info("context overflow at %s: answered as an incomplete response", url)
            return None
        after = parse_retry_after(reply.headers.get("Retry-After"))
        raise UpstreamHTTPError(url, reply.status, reply.body, retry_after=after)

    # -- the endpoints ------------------------------------------------------------------------------------
    async def responses(self, params: ResponseCreateParams, ctx: CallContext) -> Response:
        config = self.config
        body = build_chat_request(params, config)
        if sequential_reasoning_blocked(body, config):
            return chat_to_response(empty_completion(config.model, "content_filter"), params, config)
        url = self.upstream_base(ctx) + "/chat/completions"
        reply = await self.post_upstream(url, body)
        if reply is None:
            return context_overflow_response(params, config)
        try:
            return build_response(reply.json(), params, config)
        except UpstreamReplyError as exc:
            raise bad_reply(url, exc) from None

    async def chat_completions(self, params: ChatCompletionCreateParams, ctx: CallContext) -> ChatCompletion:
        config = self.config
        body = build_chat_passthrough(params.model_dump(mode="json", exclude_unset=True), config)
        url = self.upstream_base(ctx) + "/chat/completions"
        reply = await self.post_upstream(url, body)
        if reply is None:
            return empty_completion(config.model, "length")
        try:
            return parse_chat_completion(reply.json(), model=config.model)
        except UpstreamReplyError as exc:
            raise bad_reply(url, exc) from None
