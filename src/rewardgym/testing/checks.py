"""Small pieces environment tests share: the shipped config's server, one ``/verify``-style POST, the echo
check, and an in-process scripted model server."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from omegaconf import OmegaConf

from rewardgym.http.client import HttpClient, HttpReply
from rewardgym.http.config import HttpClientConfig
from rewardgym.protocol import Response, ResponseCreateParams
from rewardgym.registry import lookup
from rewardgym.servers.config import ServerConfig
from rewardgym.servers.errors import ApiError
from rewardgym.servers.model import CallContext, ModelServer
from rewardgym.servers.resources import ResourcesServer

S = TypeVar("S", bound=ResourcesServer[Any])

COLLECTOR_COLUMNS = frozenset({"_ng_task_index", "_ng_rollout_index", "agent_ref"})
"""Columns the collector adds to a rollout row; ``/verify`` never returns them."""


def shipped_server(cls: type[S], folder: str | Path, name: str) -> S:
    """The environment ``name`` as its shipped ``<folder>/configs/<name>.yaml`` configures it, after checking
    that the registry finds ``cls`` under that name."""
    assert lookup("resources_servers", name) is cls, f"{name!r} is not registered to {cls.__name__}"
    document = OmegaConf.to_container(OmegaConf.load(Path(folder) / "configs" / f"{name}.yaml"))
    assert isinstance(document, dict)
    return cls({**document[name]["resources_servers"][name], "name": name})


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
