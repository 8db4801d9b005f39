"""The model-server base class: OpenAI-compatible ``/v1/responses``, ``/v1/chat/completions``, ``/v1/models``.

Subclass contract::

    class MyModel(ModelServer[MyModelConfig]):
        async def responses(self, params: ResponseCreateParams, ctx: CallContext) -> Response: ...
        async def chat_completions(
            self, params: ChatCompletionCreateParams, ctx: CallContext
        ) -> ChatCompletion: ...
        def model_ids(self) -> list[str]: ...          # what GET /v1/models lists

- ``POST /v1/responses``: the body is validated strictly as
  :class:`~rewardgym.protocol.ResponseCreateParams` (unknown keys → 422 naming the field). The result is
  serialised with exactly the fields it was given or set (``exclude_unset``).
- ``POST /v1/chat/completions``: the body is validated as
  :class:`~rewardgym.protocol.ChatCompletionCreateParams` (extensions kept).
- ``stream: true`` is accepted on both: the subclass is called without ``stream`` and the complete result is
  replayed as server-sent events (:mod:`rewardgym.servers.sse`).
- A method the subclass does not implement answers 501. Upstream failures answer 502/504 (base app).
- :class:`CallContext` gives the subclass the caller's session id (for sticky routing) and cookies.
- Trajectory capture (NeMo Gym 0.7.0's observability): the app serves ``/ng-rollout/<rollout id>/<path>``
  as ``<path>`` (:mod:`rewardgym.servers.app`); with ``observability_enabled`` each such call of the two
  routes above — answered, failed or streamed — is appended to
  ``<model_call_capture_dir>/<rollout id>.capture.jsonl`` (:mod:`rewardgym.observe.capture`) *before* its
  answer is sent, so a caller that got the answer finds the line. Calls without the prefix are never
  captured.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response as HttpResponse

from rewardgym.errors import RewardGymError
from rewardgym.http.errors import UpstreamError, UpstreamHTTPError
from rewardgym.observe.capture import (
    CaptureStore,
    call_line,
    status_category,
)
from rewardgym.protocol import ChatCompletion, ChatCompletionCreateParams, Response, ResponseCreateParams
from rewardgym.servers.app import ROLLOUT_SCOPE_KEY
from rewardgym.servers.base import BaseServer
from rewardgym.servers.config import ServerConfig
from rewardgym.servers.errors import ApiError
from rewardgym.servers.sse import chat_events, response_events
from rewardgym.servers.wire import json_response, load_json_object, model_response, parse_body, parse_value

MC = TypeVar("MC", bound=ServerConfig)

EVENT_STREAM = "text/event-stream"


@dataclass(frozen=True, slots=True)
class CallContext:
    """What a model call knows about its caller."""

    session_id: str
    cookies: Mapping[str, str] = field(default_factory=dict)


def _with_object(result: Response | ChatCompletion) -> Response | ChatCompletion:
    """Mark ``object`` as set so the serialised result always names its type (``exclude_unset`` keeps the
    rest exactly as given)."""
    result.__pydantic_fields_set__.add("object")
    return result


Handler = Callable[[Request], Awaitable[HttpResponse]]


def _failure_status(exc: BaseException) -> tuple[int | None, str]:
    """The status the app answers ``exc`` with (as :func:`rewardgym.servers.base.build_app`'s handlers),
    and its capture ``error_category``."""
    status: int | None
    if isinstance(exc, ApiError):
        status = exc.status
    elif isinstance(exc, UpstreamHTTPError) and exc.status == 429:
        status = 429
    elif isinstance(exc, UpstreamError):
        status = exc.http_status
    elif isinstance(exc, RequestValidationError):
        status = 422
    elif isinstance(exc, StarletteHTTPException):
        status = exc.status_code
    elif isinstance(exc, RewardGymError):
        status = 400
    elif isinstance(exc, asyncio.CancelledError):
        return None, "cancelled"
    else:
        return 500, "exception"
    return status, status_category(status) or "exception"


class ModelServer(BaseServer[MC]):
    """Base of model servers; see the module docstring."""

    config_class: ClassVar[type[ServerConfig]] = ServerConfig

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        folder = self.config.model_call_capture_dir
        self.capture = CaptureStore(folder) if self.config.observability_enabled and folder else None

    async def responses(self, params: ResponseCreateParams, ctx: CallContext) -> Response:
        raise ApiError(501, f"{type(self).__name__} does not serve the Responses API", kind="not_implemented")

    async def chat_completions(self, params: ChatCompletionCreateParams, ctx: CallContext) -> ChatCompletion:
        raise ApiError(
            501, f"{type(self).__name__} does not serve the Chat Completions API", kind="not_implemented"
        )

    def model_ids(self) -> list[str]:
        """Model ids listed by ``GET /v1/models`` (default: the instance name)."""
        return [self.config.name]

    def setup_routes(self, app: FastAPI) -> None:
        app.add_api_route("/v1/responses", self._responses_route, methods=["POST"])
        app.add_api_route("/v1/chat/completions", self._chat_route, methods=["POST"])
        app.add_api_route("/v1/models", self._models_route, methods=["GET"])

    async def _captured(
        self, request: Request, dialect: str, handler: Handler, rollout_id: str
    ) -> HttpResponse:
        """Serve ``handler`` and append the call's capture line before answering."""
        assert self.capture is not None
        raw = await request.body()  # Starlette keeps it: the handler reads the same bytes
        sessions = request.headers.getlist("x-session-id")
        line = functools.partial(
            call_line,
            dialect=dialect,
            model_name=self.config.name,
            started=time.time(),
            started_clock=time.perf_counter(),
            request=raw,
            session_id=sessions[0] if len(sessions) == 1 else None,
        )
        try:
            answer = await handler(request)
        except BaseException as exc:
            status, category = _failure_status(exc)
            record = line(status=status, response=None, streamed=False, error_category=category)
            await asyncio.shield(asyncio.to_thread(self.capture.append, rollout_id, record))
            raise
        streamed = (answer.media_type or "").startswith(EVENT_STREAM)
        record = line(status=answer.status_code, response=bytes(answer.body), streamed=streamed)
        await asyncio.to_thread(self.capture.append, rollout_id, record)
        return answer

    def _context(self, request: Request) -> CallContext:
        return CallContext(session_id=self.session_id(request), cookies=request.cookies)

    async def _responses_route(self, request: Request) -> HttpResponse:
        rollout_id = request.scope.get(ROLLOUT_SCOPE_KEY)
        if rollout_id is not None and self.capture is not None:
            return await self._captured(request, "responses", self._serve_responses, rollout_id)
        return await self._serve_responses(request)

    async def _serve_responses(self, request: Request) -> HttpResponse:
        raw = await request.body()
        params = parse_body(ResponseCreateParams, raw)
        if not params.stream:
            result = await self.responses(params, self._context(request))
            return model_response(_with_object(result), exclude_unset=True)
        plain = params.model_dump(exclude_unset=True, exclude={"stream"})
        result = await self.responses(
            parse_value(ResponseCreateParams, plain, ("body",)), self._context(request)
        )
        body = response_events(_with_object(result).model_dump(mode="json", exclude_unset=True))
        return HttpResponse(body, media_type=EVENT_STREAM)

    async def _chat_route(self, request: Request) -> HttpResponse:
        rollout_id = request.scope.get(ROLLOUT_SCOPE_KEY)
        if rollout_id is not None and self.capture is not None:
            return await self._captured(request, "chat", self._serve_chat, rollout_id)
        return await self._serve_chat(request)

    async def _serve_chat(self, request: Request) -> HttpResponse:
        raw = await request.body()
        params = parse_body(ChatCompletionCreateParams, raw)
        if not params.stream:
            completion = await self.chat_completions(params, self._context(request))
            return model_response(_with_object(completion), exclude_unset=True)
        plain: dict[str, Any] = load_json_object(raw)
        plain.pop("stream", None)
        options = plain.pop("stream_options", None)
        include_usage = bool(isinstance(options, dict) and options.get("include_usage"))
        params = parse_value(ChatCompletionCreateParams, plain, ("body",))
        completion = await self.chat_completions(params, self._context(request))
        dumped = _with_object(completion).model_dump(mode="json", exclude_unset=True)
        body = chat_events(dumped, include_usage=include_usage)
        return HttpResponse(body, media_type=EVENT_STREAM)

    async def _models_route(self) -> HttpResponse:
        created = int(time.time())
        data = [
            {"id": mid, "object": "model", "created": created, "owned_by": "rewardgym"}
            for mid in self.model_ids()
        ]
        return json_response({"object": "list", "data": data})
