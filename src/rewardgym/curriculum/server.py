"""``gym curriculum serve``: one :class:`~rewardgym.curriculum.core.Curriculum` behind HTTP.

Endpoints (JSON; the server framework's conventions: loopback by default, the shared auth token on every
route but ``GET /`` when set, bodies above ``max_request_bytes`` refused with 413, errors as
``{"error": {"server", "type", "message"}}``):

- ``POST /next_batch`` ``{"n": 512, "group_size": 8?}`` → ``{"rows": [row + _ng_task_index, …], "step",
  "group_size"}``;
- ``POST /report`` ``{"task_index": 3, "rewards": [1, 0, …]}`` or ``{"groups": [{"task_index",
  "rewards"}, …]}`` → ``{"informative": [true, …]}``; a refused report (unknown task, duplicate, reward
  out of range or not finite) is HTTP 400 naming it, and no group of that request is applied;
- ``GET /state?offset=0&limit=1000`` → :meth:`CurriculumState.as_dict` of tasks ``offset …
  offset + limit − 1`` (``limit`` ≤ ``max_state_tasks``), with the totals.

Calls are handled one at a time on the server's event loop (the curriculum is not shared between
threads). Stopping the server (SIGINT / SIGTERM) snapshots the state.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from rewardgym.curriculum.core import Curriculum
from rewardgym.servers.base import BaseServer
from rewardgym.servers.config import ServerConfig
from rewardgym.servers.errors import ApiError
from rewardgym.servers.wire import json_response, parse_body

_STRICT = ConfigDict(extra="forbid")


class CurriculumServerConfig(ServerConfig):
    """Settings of the curriculum service (host, port, auth token, body limit and these)."""

    name: str = "curriculum"
    max_request_bytes: int = Field(16 * 1024 * 1024, ge=1024)
    """Largest accepted request body (a report of 4096 groups of 64 rewards is ≈ 2 MiB)."""

    max_batch: int = Field(65536, ge=1)
    """Largest ``n`` of one ``/next_batch``."""

    max_state_tasks: int = Field(100_000, ge=1)
    """Largest ``limit`` of one ``/state``."""


class NextBatchRequest(BaseModel):
    model_config = _STRICT
    n: int = Field(ge=1)
    group_size: int | None = Field(None, ge=1)


class Group(BaseModel):
    model_config = _STRICT
    task_index: int
    rewards: list[float]


class ReportRequest(BaseModel):
    model_config = _STRICT
    task_index: int | None = None
    rewards: list[float] | None = None
    groups: list[Group] | None = None


class CurriculumServer(BaseServer[CurriculumServerConfig]):
    """See the module docstring."""

    def __init__(self, config: CurriculumServerConfig | dict[str, Any], curriculum: Curriculum) -> None:
        super().__init__(config)
        self.curriculum = curriculum

    def setup_routes(self, app: FastAPI) -> None:
        app.add_api_route("/next_batch", self._next_batch, methods=["POST"])
        app.add_api_route("/report", self._report, methods=["POST"])
        app.add_api_route("/state", self._state, methods=["GET"])

    async def on_shutdown(self) -> None:
        self.curriculum.close()
        await super().on_shutdown()

    async def _next_batch(self, request: Request) -> Response:
        body = parse_body(NextBatchRequest, await request.body())
        if body.n > self.config.max_batch:
            raise ApiError(400, f"n: at most {self.config.max_batch} tasks per batch (max_batch)")
        rows = self.curriculum.next_batch(body.n, body.group_size)
        group = body.group_size or self.curriculum.group_size
        return json_response({"rows": rows, "step": self.curriculum.step, "group_size": group})

    async def _report(self, request: Request) -> Response:
        body = parse_body(ReportRequest, await request.body())
        single = body.task_index is not None or body.rewards is not None
        if single == (body.groups is not None) or (
            single and (body.task_index is None or body.rewards is None)
        ):
            raise ApiError(400, "report: send either task_index and rewards, or groups (a list of them)")
        if body.groups is not None:
            pairs = [(group.task_index, group.rewards) for group in body.groups]
        else:
            pairs = [(int(body.task_index or 0), list(body.rewards or []))]
        return json_response({"informative": self.curriculum.report_groups(pairs)})

    async def _state(self, request: Request) -> Response:
        try:
            offset = int(request.query_params.get("offset", "0"))
            limit = int(request.query_params.get("limit", "1000"))
        except ValueError:
            raise ApiError(400, "state: offset and limit must be integers") from None
        if offset < 0 or not 1 <= limit <= self.config.max_state_tasks:
            raise ApiError(
                400, f"state: offset ≥ 0 and 1 ≤ limit ≤ {self.config.max_state_tasks} (max_state_tasks)"
            )
        size = self.curriculum.size
        tasks = list(range(min(offset, size), min(offset + limit, size)))
        state = self.curriculum.state(tasks).as_dict()
        return json_response({**state, "task_count": size})
