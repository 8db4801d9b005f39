"""Small pieces environment tests share: one ``/verify``-style POST, the echo check, and an in-process
scripted model server."""

from __future__ import annotations

from typing import Any

from rewardgym.http.client import HttpClient, HttpReply
from rewardgym.http.config import HttpClientConfig
from rewardgym.protocol import Response, ResponseCreateParams
from rewardgym.servers.config import ServerConfig
from rewardgym.servers.errors import ApiError
from rewardgym.servers.model import CallContext, ModelServer

COLLECTOR_COLUMNS = frozenset({"_ng_task_index", "_ng_rollout_index", "agent_ref"})
"""Columns the collector adds to a rollout row; ``/verify`` never returns them."""


async def post(url: str, body: Any) -> HttpReply:
    """POST ``body`` as JSON once (no retry, no raise on an error status): what a test wants to see."""
    async with HttpClient(HttpClientConfig(max_attempts=1)) as http:
        return await http.post(url, json=body, raise_for_status=False)


def assert_echoed(answer: dict[str, Any], row: dict[str, Any], response: dict[str, Any]) -> None:
    """A ``/verify`` answer echoes the posted params and response unchanged (compared as validated wire
    models, so defaults filled in on either side do not count as a difference)."""
    assert Response.model_validate(answer["response"]) == Response.model_validate(response)
    params = ResponseCreateParams.model_validate
    assert params(answer["responses_create_params"]) == params(row["responses_create_params"])


class ScriptedModelServer(ModelServer[ServerConfig]):
    """A model server (our own class, in-process) answering each ``/v1/responses`` call with the next
    scripted list of output items; ``requests`` records what the agent asked. An exhausted script answers 500,
    so an agent that calls the model too often fails the test."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.script: list[list[dict[str, Any]]] = []
        self.requests: list[dict[str, Any]] = []

    async def responses(self, params: ResponseCreateParams, ctx: CallContext) -> Response:
        self.requests.append(params.model_dump(mode="json", exclude_unset=True))
        if not self.script:
            raise ApiError(500, "the script is exhausted: the agent called the model too often")
        usage = {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12}
        return Response.model_validate(
            {"id": "resp_scripted", "created_at": 0.0, "model": "scripted", "output": self.script.pop(0)}
            | {"usage": usage}
        )
