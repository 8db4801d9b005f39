"""Server construction: a config object becomes a server object, and a server object becomes a FastAPI app.

This module never launches a process or binds a port (see :mod:`rewardgym.launch.serve` and
:mod:`rewardgym.launch.supervisor`), so the same server objects can later be placed elsewhere (e.g. Ray).

Contract of :class:`BaseServer` (generic over its pydantic config class: ``class S(BaseServer[MyConfig])``
sets ``S.config_class = MyConfig`` unless the class body assigns ``config_class`` itself):
- ``Server(config)`` accepts a config instance or a plain mapping; a mapping that does not validate raises
  :class:`~rewardgym.errors.ConfigError` naming ``<instance>.<field>``.
- ``server.server_id`` is ``"<ClassName>___<instance name>"``: the session cookie name and the ``server``
  of every error body.
- ``server.http`` is the process's pooled :class:`~rewardgym.http.client.HttpClient` (created lazily inside
  the running loop, closed at shutdown); ``server.peer_headers`` authenticates calls to peer servers.
- Subclasses add routes in :meth:`BaseServer.setup_routes` and may override ``on_startup``/``on_shutdown``.

:func:`build_app` adds to every server:
- ``GET /`` liveness → ``{"status": "ok", "name": <instance>}`` (never authenticated);
- the gate (auth token, request-size limit → 413, session id in a Starlette-compatible signed cookie named
  ``server_id`` — secret: ``session_secret`` or a random per-start key — re-sent on every response) and a
  last-resort 500 (:mod:`rewardgym.servers.middleware`);
- direct dispatch of simple routes (:class:`~rewardgym.servers.app.ServerApp`: the app is a FastAPI app whose
  ``async (request) -> Response`` routes skip FastAPI's per-request machinery);
- error answers ``{"error": {"server", "type", "message"}}``: 422 for invalid bodies (with FastAPI's
  ``detail`` list naming each field), the handler's status for :class:`ApiError`, 502/504 for upstream
  failures, 400 for other :class:`~rewardgym.errors.RewardGymError`, 404/405 with ``detail`` as FastAPI
  has it. No traceback is ever sent; it goes to the JSON log ``<log_dir>/<name>.log``.
"""

from __future__ import annotations

import difflib
import logging
import math
import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, ClassVar, Generic, TypeVar, cast, get_args, get_origin

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, SecretStr, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from rewardgym.config.secrets import redact_text, register_secret, register_secrets_in
from rewardgym.errors import ConfigError, RewardGymError
from rewardgym.http.client import HttpClient
from rewardgym.http.errors import UpstreamError, UpstreamHTTPError
from rewardgym.servers.app import ServerApp
from rewardgym.servers.config import ServerConfig
from rewardgym.servers.errors import ApiError
from rewardgym.servers.logs import server_logger
from rewardgym.servers.middleware import SESSION_ID_KEY, Gate
from rewardgym.servers.wire import describe_validation, error_body, json_response

C = TypeVar("C", bound=ServerConfig)

TOKEN_HEADER = "X-Rewardgym-Token"
_NO_TELEMETRY = {"tracing": False, "metrics": False, "logs": False}


def _fields_at(model: type[BaseModel] | None, loc: tuple[int | str, ...]) -> list[str]:
    """The field names of the (nested) config model at ``loc``; empty where it is not a model."""
    for part in loc:
        field = model.model_fields.get(str(part)) if model is not None else None
        annotation = field.annotation if field is not None else None
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    return list(model.model_fields) if model is not None else []


def format_config_error(name: str, exc: ValidationError, model: type[BaseModel] | None = None) -> str:
    """One line per invalid field: ``<instance>.<field>: <message>`` (values are not echoed); an unknown
    field gets a "did you mean" among the fields of ``model`` (the config class) at that level."""
    lines = []
    for err in exc.errors(include_url=False, include_input=False):
        field = ".".join(str(p) for p in err["loc"])
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            close = difflib.get_close_matches(
                str(err["loc"][-1]), _fields_at(model, err["loc"][:-1]), n=1, cutoff=0.6
            )
            hint = f"; did you mean {close[0]!r}?" if close else ""
            msg = f"unknown field (not a setting of this server{hint})"
        lines.append(f"{name}.{field}: {msg}")
    return "invalid server config:\n  " + "\n  ".join(lines)


def register_config_secrets(model: BaseModel) -> None:
    """Register every ``SecretStr`` value of a config (recursively) so redaction masks it in any text."""
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, SecretStr):
            register_secret(value.get_secret_value())
        elif isinstance(value, BaseModel):
            register_config_secrets(value)
        elif isinstance(value, dict):
            register_secrets_in(value)


def config_class_of(cls: type) -> type[ServerConfig] | None:
    """The config class a server class names as its generic parameter (``MyServer(ResourcesServer[MyConfig])``
    → ``MyConfig``), so authors declare it once; ``None`` while the parameter is still a type variable."""
    for base in getattr(cls, "__orig_bases__", ()):
        origin = get_origin(base)
        if not (isinstance(origin, type) and issubclass(origin, BaseServer)):
            continue
        for arg in get_args(base):
            if isinstance(arg, type) and issubclass(arg, ServerConfig):
                return arg
    return None


class BaseServer(Generic[C]):
    """Base of every server; see the module docstring."""

    config_class: ClassVar[type[ServerConfig]] = ServerConfig
    direct_dispatch: ClassVar[bool] = True
    """Serve simple routes without FastAPI's per-request machinery (see :mod:`rewardgym.servers.app`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "config_class" not in cls.__dict__:
            inferred = config_class_of(cls)
            if inferred is not None:
                cls.config_class = inferred

    def __init__(self, config: C | Mapping[str, Any]) -> None:
        self.config: C = self.load_config(config)
        register_config_secrets(self.config)
        self.server_id = f"{type(self).__name__}___{self.config.name}"
        secret = self.config.session_secret
        self.session_secret = secret.get_secret_value() if secret else secrets.token_urlsafe(32)
        self.log: logging.Logger = server_logger(self.config.name, self.config.log_dir, self.config.log_level)
        token = self.config.auth_token
        self.peer_headers: dict[str, str] = {TOKEN_HEADER: token.get_secret_value()} if token else {}
        self._http: HttpClient | None = None

    @classmethod
    def load_config(cls, config: C | Mapping[str, Any]) -> C:
        """Validate ``config`` into ``config_class`` (ConfigError naming the field on failure)."""
        if isinstance(config, cls.config_class):
            return config
        raw = dict(config.model_dump() if isinstance(config, ServerConfig) else config)
        try:
            return cast(C, cls.config_class.model_validate(raw))
        except ValidationError as exc:
            name = str(raw.get("name", cls.__name__))
            raise ConfigError(format_config_error(name, exc, cls.config_class)) from None

    @property
    def http(self) -> HttpClient:
        """The pooled outbound client of this server (one per process in normal operation)."""
        if self._http is None:
            self._http = HttpClient(self.config.http, router=self.config.peer_router())
        return self._http

    @staticmethod
    def session_id(request: Request) -> str:
        """The session id of the request (set by the guard middleware on every request)."""
        return str(request.session[SESSION_ID_KEY])

    def setup_routes(self, app: FastAPI) -> None:
        """Add this server's endpoints to ``app`` (subclasses)."""

    async def on_startup(self) -> None:
        """Called once before the server accepts requests."""

    async def on_shutdown(self) -> None:
        """Called once after the server stopped accepting requests."""
        if self._http is not None:
            await self._http.close()

    def build_app(self) -> FastAPI:
        return build_app(self)


def build_app(server: BaseServer[Any]) -> FastAPI:
    """The FastAPI app of ``server`` with the shared behaviour of the module docstring."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await server.on_startup()
        server.log.info("server %s ready", server.server_id)
        try:
            yield
        finally:
            await server.on_shutdown()

    token = server.config.auth_token
    gate = Gate(
        server_id=server.server_id,
        max_request_bytes=server.config.max_request_bytes,
        auth_token=token.get_secret_value() if token else None,
        session_secret=server.session_secret,
        logger=server.log,
    )
    app = ServerApp(
        gate=gate,
        direct_dispatch=server.direct_dispatch,
        title=server.server_id,
        lifespan=lifespan,
        telemetry=_NO_TELEMETRY,
        redoc_url=None,
    )
    app.state.server = server
    sid = server.server_id
    log = server.log

    async def liveness() -> Response:
        return json_response({"status": "ok", "name": server.config.name})

    app.add_api_route("/", liveness, methods=["GET"], include_in_schema=False)

    async def on_http_exception(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        body = error_body(sid, "http_error", str(exc.detail), detail=exc.detail)
        return json_response(body, exc.status_code, dict(exc.headers or {}))

    async def on_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        errors = [
            {"type": e.get("type"), "loc": list(e.get("loc", ())), "msg": e.get("msg")} for e in exc.errors()
        ]
        message = describe_validation(errors)
        log.info("422 %s %s: %s", request.method, request.url.path, message)
        return json_response(error_body(sid, "validation_error", message, detail=errors), 422)

    async def on_api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        log.info("%d %s %s: %s", exc.status, request.method, request.url.path, exc.message)
        return json_response(error_body(sid, exc.kind, redact_text(exc.message)), exc.status, exc.headers)

    async def on_upstream(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, UpstreamError)
        message = redact_text(str(exc))
        log.warning("%s %s: upstream failure: %s", request.method, request.url.path, message)
        if isinstance(exc, UpstreamHTTPError) and exc.status == 429:
            # Still rate limited after our retries: say so (with the upstream's wait), so callers back off.
            wait = {"Retry-After": str(math.ceil(exc.retry_after))} if exc.retry_after is not None else {}
            return json_response(error_body(sid, "rate_limited", message), 429, wait)
        return json_response(error_body(sid, exc.kind, message), exc.http_status)

    async def on_gym_error(request: Request, exc: Exception) -> Response:
        message = redact_text(str(exc))
        log.info("400 %s %s: %s", request.method, request.url.path, message)
        return json_response(error_body(sid, type(exc).__name__, message), 400)

    app.add_exception_handler(StarletteHTTPException, on_http_exception)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(UpstreamError, on_upstream)
    app.add_exception_handler(RewardGymError, on_gym_error)

    server.setup_routes(app)
    return app
