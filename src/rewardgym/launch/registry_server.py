"""The head registry: where other processes find the running servers (never their secrets).

Endpoints (all ``GET``):
- ``/`` → ``{"status": "ok", "name": <instance>}`` (liveness);
- ``/server_instances`` → a list of :class:`~rewardgym.launch.child_spec.InstanceRecord`
  (``name, kind, implementation, url, pid, status, started_at, exit_code, model``), each with the fields
  NeMo Gym 0.7.0's tools index added (``process_name`` = name, ``server_type`` = kind, ``host``, ``port``,
  ``start_time`` = started_at; docs/reference/nemo_gym_interop.md §2);
- ``/health`` → ``{"status": "ok" | "degraded" | "starting", "servers": [{name, url, healthy, latency_ms,
  error?}], "waiting_for": [upstream, …]}`` (``starting`` while ``gym env start`` still waits for an
  upstream: the stack is not ready even when every server answers),
  probing every instance's ``GET /`` concurrently with a short timeout;
- ``POST /identity`` ``{"challenge": c}`` → ``{"stack": HMAC(stack secret, c), "token": HMAC(token, c)}``
  (open; :mod:`rewardgym.launch.head_identity`): how ``gym env stop`` and ``--no-serve`` tell this head
  from a decoy before they signal a pid or send the token;
- ``/supervisor`` → ``{"pid", "started_at", "version"}`` of the process that owns the instances (used by
  ``gym env stop``);
- ``/global_config_dict_yaml`` → for NeMo Gym 0.7.0's collector: a JSON string holding, as YAML, the
  secret-free config document of :mod:`rewardgym.launch.config_document` (instances, ports, the
  environment-server relay entries its collector needs; every secret removed). Served only when the
  supervisor gives the head its specs.
Anything else is answered 404 (405 for another method) with the JSON error body of every server.

Only these fields are served. The resolved config — which holds API keys, session secrets and auth
tokens — is never exposed (the config document above is rebuilt from the instances without any of them):
a client in another process (``gym eval run --no-serve``, ``gym env status``) takes URLs from here and
credentials from its own ``env.yaml``/flags.

:class:`HeadServer` runs inside the supervisor process while the children boot on the same cores, so it is a
small Starlette app rather than a FastAPI :class:`~rewardgym.servers.base.BaseServer` (importing FastAPI costs
a few hundred milliseconds of CPU). It has the server attributes the launcher uses (``config``,
``server_id``, ``log``, ``http``, ``build_app()``), logs to ``<log_dir>/head_server.log`` and sets no session
cookie.
"""

from __future__ import annotations

import asyncio
import hmac
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import rewardgym
from rewardgym.http.client import HttpClient
from rewardgym.http.errors import UpstreamError
from rewardgym.launch.child_spec import InstanceRecord
from rewardgym.launch.head_identity import identity_answer, new_stack_secret
from rewardgym.servers.config import ServerConfig
from rewardgym.servers.logs import server_logger
from rewardgym.servers.wire import error_body, json_response

PROBE_TIMEOUT_S = 2.0


def _with_nemo_gym_aliases(record: dict[str, Any]) -> dict[str, Any]:
    """Our record plus the fields NeMo Gym 0.7.0's tools index (``gym env status`` reads ``process_name``,
    ``server_type``, ``host``, ``port``, ``start_time``); ``name`` keeps our meaning (the instance)."""
    split = urlsplit(record["url"])
    return {
        **record,
        "process_name": record["name"],
        "server_type": record["kind"],
        "host": split.hostname,
        "port": split.port,
        "start_time": record.get("started_at"),
    }


class HeadServerConfig(ServerConfig):
    """Settings of the head registry (``head_server`` in the config: host and port)."""


class HeadServer:
    """Serves the instance table of its supervisor; see the module docstring."""

    def __init__(
        self,
        config: HeadServerConfig | Mapping[str, Any],
        *,
        instances: Callable[[], list[InstanceRecord]],
        supervisor_pid: int | None = None,
        config_document: Callable[[], Mapping[str, Any]] | None = None,
        stack_secret: str | None = None,
        waiting_for: Callable[[], list[str]] | None = None,
    ) -> None:
        self.config = (
            config if isinstance(config, HeadServerConfig) else HeadServerConfig.model_validate(config)
        )
        self.server_id = f"{type(self).__name__}___{self.config.name}"
        self.log = server_logger(self.config.name, self.config.log_dir, self.config.log_level)
        self._instances = instances
        self._pid = supervisor_pid or os.getpid()
        self._started_at = time.time()
        self._http: HttpClient | None = None
        self._config_document = config_document
        self._document_body: bytes | None = None
        self._stack_secret = stack_secret or new_stack_secret()
        self._waiting_for = waiting_for or list

    @property
    def http(self) -> HttpClient:
        """The outbound client of the health probes (created on first use)."""
        if self._http is None:
            self._http = HttpClient(self.config.http)
        return self._http

    def _guarded(
        self, route: Callable[[Request], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        """With an ``auth_token``, answer 401 unless the request carries it (as every server does)."""
        secret = self.config.auth_token
        if secret is None:
            return route
        token = secret.get_secret_value().encode()

        async def guarded(request: Request) -> Response:
            given = request.headers.get("x-rewardgym-token", "")
            bearer = request.headers.get("authorization", "")
            if bearer.lower().startswith("bearer "):
                given = given or bearer[7:]
            if not hmac.compare_digest(given.encode(), token):
                body = error_body(self.server_id, "unauthorized", "missing or wrong auth token")
                return json_response(body, 401)
            return await route(request)

        return guarded

    async def _liveness(self, _request: Request) -> Response:
        return json_response({"status": "ok", "name": self.config.name})

    async def _instances_route(self, _request: Request) -> Response:
        return json_response([_with_nemo_gym_aliases(r.model_dump(mode="json")) for r in self._instances()])

    async def _identity_route(self, request: Request) -> Response:
        """The proofs of :mod:`rewardgym.launch.head_identity` for the challenge sent (open: they reveal
        nothing but that this head holds the stack's secret and, when set, the shared token)."""
        try:
            challenge = orjson.loads(await request.body()).get("challenge")
        except (orjson.JSONDecodeError, AttributeError):
            challenge = None
        token = self.config.auth_token.get_secret_value() if self.config.auth_token else None
        answer = identity_answer(challenge, self._stack_secret, token)
        return json_response(answer, 400 if "error" in answer else 200)

    async def _supervisor_route(self, _request: Request) -> Response:
        return json_response(
            {"pid": self._pid, "started_at": self._started_at, "version": rewardgym.__version__}
        )

    async def _config_route(self, _request: Request) -> Response:
        if self._config_document is None:
            raise HTTPException(404, "this head serves no config document")
        if self._document_body is None:
            from rewardgym.launch.config_document import document_body

            self._document_body = document_body(self._config_document())
        return Response(self._document_body, media_type="application/json")

    async def _probe(self, record: InstanceRecord) -> dict[str, Any]:
        started = time.perf_counter()
        entry: dict[str, Any] = {"name": record.name, "url": record.url}
        try:
            reply = await self.http.get(
                f"{record.url}/", timeout_s=PROBE_TIMEOUT_S, max_attempts=1, raise_for_status=False
            )
            entry["healthy"] = reply.status < 500
            if not entry["healthy"]:
                entry["error"] = f"HTTP {reply.status}"
        except UpstreamError as exc:
            entry["healthy"] = False
            entry["error"] = exc.kind
        entry["latency_ms"] = round((time.perf_counter() - started) * 1000, 2)
        return entry

    async def _health_route(self, _request: Request) -> Response:
        servers = await asyncio.gather(*(self._probe(r) for r in self._instances()))
        waiting = self._waiting_for()
        status = "starting" if waiting else "ok" if all(s["healthy"] for s in servers) else "degraded"
        return json_response({"status": status, "servers": list(servers), "waiting_for": waiting})

    async def _http_error(self, _request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        body = error_body(self.server_id, "http_error", str(exc.detail), detail=exc.detail)
        return json_response(body, exc.status_code, dict(exc.headers or {}))

    def build_app(self) -> Starlette:
        """The ASGI app of the registry."""

        @asynccontextmanager
        async def lifespan(_app: Starlette) -> AsyncIterator[None]:
            self.log.info("server %s ready", self.server_id)
            try:
                yield
            finally:
                if self._http is not None:
                    await self._http.close()

        routes = [
            Route("/", self._liveness, methods=["GET"]),
            Route("/server_instances", self._guarded(self._instances_route), methods=["GET"]),
            Route("/health", self._guarded(self._health_route), methods=["GET"]),
            Route("/supervisor", self._guarded(self._supervisor_route), methods=["GET"]),
            Route("/identity", self._identity_route, methods=["POST"]),
            Route("/global_config_dict_yaml", self._guarded(self._config_route), methods=["GET"]),
        ]
        return Starlette(
            routes=routes, lifespan=lifespan, exception_handlers={HTTPException: self._http_error}
        )
