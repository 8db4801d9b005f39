"""The head registry: where other processes find the running servers (never their secrets).

Endpoints (all ``GET``):
- ``/server_instances`` → a list of :class:`~rewardgym.servers.spec.InstanceRecord`
  (``name, kind, implementation, url, pid, status, started_at, exit_code``);
- ``/health`` → ``{"status": "ok" | "degraded", "servers": [{name, url, healthy, latency_ms, error?}]}``,
  probing every instance's ``GET /`` concurrently with a short timeout;
- ``/supervisor`` → ``{"pid", "started_at", "version"}`` of the process that owns the instances (used by
  ``gym env stop``).

Only these fields are served. The resolved config — which holds API keys, session secrets and auth
tokens — is never exposed: a client in another process (``gym eval run --no-serve``, ``gym env status``)
takes URLs from here and credentials from its own ``env.yaml``/flags.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Any, ClassVar

from fastapi import FastAPI
from starlette.responses import Response

import rewardgym
from rewardgym.servers.base import BaseServer
from rewardgym.servers.config import ServerConfig
from rewardgym.servers.errors import UpstreamError
from rewardgym.servers.spec import InstanceRecord
from rewardgym.servers.wire import json_response

PROBE_TIMEOUT_S = 2.0


class HeadServerConfig(ServerConfig):
    """Settings of the head registry (``head_server`` in the config: host and port)."""


class HeadServer(BaseServer[HeadServerConfig]):
    """Serves the instance table of its supervisor."""

    config_class: ClassVar[type[ServerConfig]] = HeadServerConfig

    def __init__(
        self,
        config: Any,
        *,
        instances: Callable[[], list[InstanceRecord]],
        supervisor_pid: int | None = None,
    ) -> None:
        super().__init__(config)
        self._instances = instances
        self._pid = supervisor_pid or os.getpid()
        self._started_at = time.time()

    def setup_routes(self, app: FastAPI) -> None:
        app.add_api_route("/server_instances", self._instances_route, methods=["GET"])
        app.add_api_route("/health", self._health_route, methods=["GET"])
        app.add_api_route("/supervisor", self._supervisor_route, methods=["GET"])

    async def _instances_route(self) -> Response:
        return json_response([record.model_dump(mode="json") for record in self._instances()])

    async def _supervisor_route(self) -> Response:
        return json_response({"pid": self._pid, "started_at": self._started_at, "version": rewardgym.__version__})

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

    async def _health_route(self) -> Response:
        servers = await asyncio.gather(*(self._probe(r) for r in self._instances()))
        status = "ok" if all(s["healthy"] for s in servers) else "degraded"
        return json_response({"status": status, "servers": list(servers)})
