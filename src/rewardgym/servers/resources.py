"""The resources-server (environment) base class: seed_session, verify, tools, sessions, metrics.

Subclass contract::

    class MyServer(ResourcesServer[MyConfig]):        # MyConfig: a ResourcesServerConfig subclass
        reverify_mode = ReverifyMode.STATELESS        # GET /reverify_mode

        async def verify(self, body: MyVerifyRequest) -> MyVerifyResponse:
            return self.verify_response(body, reward=1.0, extracted_answer="B")

        @tool
        async def get_weather(self, args: GetWeatherArgs, session: Session) -> WeatherResult: ...

Each type is written once: ``config_class`` comes from the generic parameter, ``verify_request_class``
(the row fields the verifier reads, plus ``response``) and ``verify_response_class`` (exactly the fields
``/verify`` returns) from ``verify``'s annotations, ``seed_session_request_class`` from ``seed_session``'s
first parameter. A class attribute assigned in the class body wins over the inferred one, and an annotation
broader than the inherited class (an override annotated ``-> VerifyResponse``) keeps the inherited one; an
annotation that is a pydantic model of the wrong base is a ``TypeError`` at class definition.

Endpoints (all ``POST`` except ``GET /reverify_mode``):
- ``/seed_session``: body validated as ``seed_session_request_class`` (the whole row); ``seed_session(body)``
  may initialise ``self.current_session().state``; answers ``{}`` unless it returns something. A server that
  keeps the default no-op and request class reads nothing of the row, so only its shape is checked (a JSON
  object with a ``responses_create_params`` object, else the same 422); the content of
  ``responses_create_params`` is validated by the agent's ``/run``, the model server and ``/verify``.
- ``/verify``: body validated as ``verify_request_class`` (422 naming the field otherwise); the answer holds
  only the fields ``verify_response_class`` declares (NeMo Gym's ``extra="ignore"``), nulls included.
  A :class:`~rewardgym.servers.errors.JudgeError` becomes HTTP 200 with ``reward: 0.0`` and
  ``_ng_failure_class: "judge_failed"`` (the collector routes such rows to the failures sidecar).
- ``/aggregate_metrics``: :func:`rewardgym.metrics.aggregate_metrics.compute_aggregate_metrics` with this
  class's ``compute_metrics``, ``get_key_metrics`` and ``profile_fn`` (the profiler hook).
- ``/<tool>``: one per ``@tool`` method (see :mod:`rewardgym.servers.tools`).

Sessions: state lives in ``self.sessions`` (:class:`~rewardgym.servers.sessions.SessionStore`, TTL
``session_ttl_s``, LRU cap ``max_sessions``) keyed by the signed session cookie's ``session_id``; during a
request, :meth:`ResourcesServer.current_session` returns that session (``create=False``: ``None`` when the
session is unknown or expired).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, ClassVar, TypeVar, get_type_hints

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field, field_validator
from starlette.responses import Response

from rewardgym.metrics.aggregate_metrics import ProfileFn, compute_aggregate_metrics, profiler_profile
from rewardgym.metrics.key_metrics import default_key_metrics
from rewardgym.protocol import (
    AggregateMetricsRequest,
    FunctionTool,
    ReverifyMode,
    SeedSessionRequest,
    VerifyRequest,
    VerifyResponse,
    keys,
)
from rewardgym.servers.base import BaseServer
from rewardgym.servers.config import ServerConfig
from rewardgym.servers.errors import JudgeError
from rewardgym.servers.sessions import Session, SessionStore
from rewardgym.servers.tools import ToolSpec, collect_tools
from rewardgym.servers.wire import json_response, load_row, model_response, parse_body

_SESSION_ID: ContextVar[str | None] = ContextVar("rewardgym_session_id", default=None)

FAILURE_JUDGE_ERROR = "_ng_failure_judge_error"


class ResourcesServerConfig(ServerConfig):
    """Fields of every resources server."""

    session_ttl_s: float = Field(3600.0, gt=0)
    """Seconds a session's state is kept after its last use."""

    max_sessions: int = Field(100_000, ge=1)
    """Live sessions kept at most; beyond it the least recently used session is dropped."""

    reward_range: tuple[float, float] = (0.0, 1.0)
    """The rewards ``verify`` can return, ``[low, high]``: the health check's ``reward_out_of_range``
    flags any other. An environment whose rewards are not 0..1 declares its own default in its config
    class; a YAML ``reward_range: [0, 10]`` overrides it. ``gym eval run`` records it in
    ``<stem>_run.json``."""

    @field_validator("reward_range")
    @classmethod
    def _ordered_range(cls, value: tuple[float, float]) -> tuple[float, float]:
        low, high = value
        if not (math.isfinite(low) and math.isfinite(high)) or low > high:
            raise ValueError("reward_range must be [low, high] with finite low <= high")
        return value


RC = TypeVar("RC", bound=ResourcesServerConfig)


def to_response(value: Any) -> Response:
    """A handler's return value as a JSON response (``None`` → ``{}``)."""
    if isinstance(value, BaseModel):
        return model_response(value)
    return json_response({} if value is None else value)


def _check_row_shape(raw: bytes) -> None:
    """422 unless ``raw`` is a row whose ``responses_create_params`` is an object (the errors pydantic gives
    for the same row; the agent, the model server and ``/verify`` validate its content)."""
    if not isinstance(load_row(raw)[keys.RESPONSES_CREATE_PARAMS], dict):
        loc = ["body", keys.RESPONSES_CREATE_PARAMS]
        message = "Input should be a valid dictionary or instance of ResponseCreateParams"
        raise RequestValidationError([{"type": "model_type", "loc": loc, "msg": message}])


_INFERRED = (
    # (method, class attribute, required base, from the return annotation?)
    ("verify", "verify_request_class", VerifyRequest, False),
    ("verify", "verify_response_class", VerifyResponse, True),
    ("seed_session", "seed_session_request_class", BaseModel, False),
)


def _annotated_model(
    cls: type, method: str, base: type[BaseModel], *, result: bool
) -> type[BaseModel] | None:
    """The pydantic model annotated on ``cls.<method>``'s first parameter (or its return value); ``None`` when
    that annotation is absent or not a class (e.g. ``Any``, a mapping, ``None``)."""
    func = cls.__dict__[method]
    try:
        hints = get_type_hints(func)
    except NameError as exc:
        raise TypeError(f"{cls.__name__}.{method}: cannot resolve its annotations ({exc})") from None
    if result:
        hint = hints.get("return")
    else:
        params = [name for name in func.__code__.co_varnames[1 : func.__code__.co_argcount]]
        hint = hints.get(params[0]) if params else None
    if not isinstance(hint, type) or not issubclass(hint, BaseModel):
        return None
    if not issubclass(hint, base):
        where = "return value" if result else "first parameter"
        raise TypeError(
            f"{cls.__name__}.{method}: its {where} must be a {base.__name__} subclass, not {hint}"
        )
    return hint


class ResourcesServer(BaseServer[RC]):
    """Base class of environments; see the module docstring."""

    config_class: ClassVar[type[ServerConfig]] = ResourcesServerConfig
    seed_session_request_class: ClassVar[type[BaseModel]] = SeedSessionRequest
    verify_request_class: ClassVar[type[VerifyRequest]] = VerifyRequest
    verify_response_class: ClassVar[type[VerifyResponse]] = VerifyResponse
    reverify_mode: ClassVar[ReverifyMode] = ReverifyMode.UNKNOWN
    profile_fn: ClassVar[ProfileFn] = staticmethod(profiler_profile)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for method, slot, base, result in _INFERRED:
            if method in cls.__dict__ and slot not in cls.__dict__:
                inferred = _annotated_model(cls, method, base, result=result)
                # Only a refinement of the inherited class: an override annotated with a broader type (e.g. a
                # subclass whose verify says ``-> VerifyResponse``) keeps what its parent declared.
                if inferred is not None and issubclass(inferred, getattr(cls, slot)):
                    setattr(cls, slot, inferred)

    def __init__(self, config: RC | Mapping[str, Any]) -> None:
        super().__init__(config)
        self.sessions = SessionStore(ttl_s=self.config.session_ttl_s, max_sessions=self.config.max_sessions)
        self.tools: list[ToolSpec] = collect_tools(type(self))

    # ----------------------------------------------------------------- subclass hooks
    async def seed_session(self, body: Any) -> BaseModel | Mapping[str, Any] | None:
        """Initialise the session of an episode from its row (default: nothing)."""
        return None

    async def verify(self, body: Any) -> VerifyResponse:
        """Score the episode in ``body`` (a ``verify_request_class`` instance)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement verify()")

    def compute_metrics(self, tasks: list[list[dict[str, Any]]]) -> Mapping[str, Any]:
        """Environment metrics over tasks (each the list of its verify responses), e.g. pass@k."""
        return {}

    def get_key_metrics(self, agent_metrics: Mapping[str, Any]) -> Mapping[str, Any]:
        """The headline subset of ``agent_metrics`` (default: every ``mean/*`` entry)."""
        return default_key_metrics(agent_metrics)

    @classmethod
    def _seed_reads_nothing(cls) -> bool:
        """Whether ``/seed_session`` is the default no-op with the default request class (NeMo Gym's
        ``BaseSeedSessionRequest`` has no field either): then validating the whole row, one more full pass
        over its ``responses_create_params`` per rollout, would check what nothing here reads."""
        return cls.seed_session is ResourcesServer.seed_session and cls.seed_session_request_class is (
            SeedSessionRequest
        )

    # ----------------------------------------------------------------- helpers for subclasses
    def current_session(self, create: bool = True) -> Session | None:
        """The session of the request being handled (created unless ``create=False``)."""
        sid = _SESSION_ID.get()
        if sid is None:
            return None
        return self.sessions.get_or_create(sid) if create else self.sessions.get(sid)

    def verify_response(self, body: BaseModel, **fields: Any) -> VerifyResponse:
        """A ``verify_response_class`` built from the request's fields plus ``fields`` (no re-validation of
        the nested request/response models); ``Result.of(body, …)`` does the same with the precise type."""
        return self.verify_response_class.of(body, **fields)

    def function_tools(self) -> list[FunctionTool]:
        """OpenAI function-tool declarations of this server's tools."""
        return [spec.function_tool() for spec in self.tools]

    # ----------------------------------------------------------------- routes
    def setup_routes(self, app: FastAPI) -> None:
        app.add_api_route("/seed_session", self._seed_route, methods=["POST"])
        app.add_api_route("/verify", self._verify_route, methods=["POST"])
        app.add_api_route("/aggregate_metrics", self._aggregate_route, methods=["POST"])
        app.add_api_route("/reverify_mode", self._reverify_mode_route, methods=["GET"])
        for spec in self.tools:
            app.add_api_route(f"/{spec.name}", self._tool_route(spec), methods=["POST"], name=spec.name)

    async def _seed_route(self, request: Request) -> Response:
        raw = await request.body()
        if self._seed_reads_nothing():
            _check_row_shape(raw)  # the default no-op reads nothing: the row's shape is all there is to check
            return json_response({})
        body = parse_body(self.seed_session_request_class, raw)
        token = _SESSION_ID.set(self.session_id(request))
        try:
            return to_response(await self.seed_session(body))
        finally:
            _SESSION_ID.reset(token)

    async def _verify_route(self, request: Request) -> Response:
        body = parse_body(self.verify_request_class, await request.body())
        token = _SESSION_ID.set(self.session_id(request))
        try:
            result = await self.verify(body)
        except JudgeError as exc:
            self.log.warning("judge failed: %s", exc)
            failed = body.model_dump(mode="json") | {
                keys.REWARD: 0.0,
                keys.FAILURE_CLASS: "judge_failed",
                FAILURE_JUDGE_ERROR: f"{type(exc).__name__}: {exc}",
            }
            return json_response(failed)
        finally:
            _SESSION_ID.reset(token)
        return model_response(result)

    async def _aggregate_route(self, request: Request) -> Response:
        body = parse_body(AggregateMetricsRequest, await request.body())
        for index, row in enumerate(body.verify_responses):
            reward = row.get("reward")
            if isinstance(reward, bool) or not isinstance(reward, int | float):
                loc = ["body", "verify_responses", index, "reward"]
                message = "Field required" if reward is None else "Input should be a number"
                raise RequestValidationError([{"type": "value_error", "loc": loc, "msg": message}])
        result = await asyncio.to_thread(
            compute_aggregate_metrics,
            body.verify_responses,
            compute_metrics=self.compute_metrics,
            key_metrics=self.get_key_metrics,
            profile=type(self).profile_fn,
        )
        return model_response(result)

    async def _reverify_mode_route(self) -> Response:
        return json_response(str(self.reverify_mode.value))

    def _tool_route(self, spec: ToolSpec) -> Any:
        method = getattr(self, spec.method_name)

        async def route(request: Request) -> Response:
            args = parse_body(spec.args_model, await request.body())
            sid = self.session_id(request)
            token = _SESSION_ID.set(sid)
            try:
                if spec.takes_session:
                    result = await method(args, session=self.sessions.get_or_create(sid))
                else:
                    result = await method(args)
            finally:
                _SESSION_ID.reset(token)
            return to_response(result)

        return route
