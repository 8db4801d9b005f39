"""A NeMo Gym 0.7.0 stack played back from recordings: a real head server and a real agent over HTTP.

The answers come from ``tests/data/nemo_gym/interop/`` (recorded from a running NeMo Gym 0.7.0, see its
NOTICE). :func:`nemo_gym_head_app` serves the recorded ``/``, ``/health``, ``/server_instances`` and
``/global_config_dict_yaml`` bodies, with the agent's URL (record ``url``/``port``, config ``port``)
replaced by the URL of the agent given; :func:`nemo_gym_agent_app` answers ``/run`` with the recorded
NeMo Gym answer to the same prompt (``responses_create_params.input``; HTTP 404 for a row it has no
recording of) and ``/aggregate_metrics`` with the recorded answer, and keeps every request it received.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

INTEROP = Path(__file__).resolve().parents[1] / "data" / "nemo_gym" / "interop"
AGENT_KIND = "responses_api_agents"


def recorded(name: str) -> Any:
    """A recorded JSON file of the interop folder."""
    return orjson.loads((INTEROP / name).read_bytes())


def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


def nemo_gym_head_app(agent_url: str, relay: str | None = None) -> Starlette:
    """NeMo Gym's head as recorded, its agent instance pointing at ``agent_url``; ``relay`` renames the
    environment-server relay in front of the agent (a user's config may name it anything)."""
    port = urlsplit(agent_url).port
    records = recorded("head_server_instances.json")
    recorded_relay = next(r for r in records if r["server_type"] == "environment_servers")["process_name"]
    for record in records:
        if record["server_type"] == AGENT_KIND:
            record.update(url=agent_url, port=port)
        if relay is not None and record["process_name"] == recorded_relay:
            record.update(process_name=relay, config_path=relay)
    document: str = recorded("head_global_config_dict_yaml.json")
    if relay is not None:
        document = document.replace(f"\n{recorded_relay}:\n", f"\n{relay}:\n")
    recorded_port = next(r for r in recorded("head_server_instances.json") if r["server_type"] == AGENT_KIND)[
        "port"
    ]
    document = document.replace(f"port: {recorded_port}\n", f"port: {port}\n")

    async def root(_r: Request) -> Response:
        return _json(recorded("head_root.json"))

    async def health(_r: Request) -> Response:
        return _json(recorded("head_health.json"))

    async def instances(_r: Request) -> Response:
        return _json(records)

    async def config(_r: Request) -> Response:
        return _json(document)

    return Starlette(
        routes=[
            Route("/", root),
            Route("/health", health),
            Route("/server_instances", instances),
            Route("/global_config_dict_yaml", config),
        ]
    )


@dataclass
class AgentLog:
    """What the played-back agent received."""

    runs: list[dict[str, Any]] = field(default_factory=list)
    aggregates: list[dict[str, Any]] = field(default_factory=list)


def _task(row: dict[str, Any]) -> bytes:
    """Which recorded task a row is: its prompt (``responses_create_params.input``), keys sorted."""
    return orjson.dumps((row.get("responses_create_params") or {}).get("input"), option=orjson.OPT_SORT_KEYS)


def nemo_gym_agent_app(log: AgentLog) -> Starlette:
    """NeMo Gym's simple_agent as recorded (``/run``, ``/aggregate_metrics``, ``/``)."""
    exchange = recorded("agent_exchange.json")
    answers = {_task(e["request_body"]): e["response_body"] for e in exchange if e["path"] == "/run"}
    aggregate = next(e["response_body"] for e in exchange if e["path"] == "/aggregate_metrics")

    async def run(request: Request) -> Response:
        row = orjson.loads(await request.body())
        log.runs.append(row)
        answer = answers.get(_task(row))
        if answer is None:
            return _json({"detail": "no recorded answer for this row"}, 404)
        return _json(answer)

    async def aggregate_metrics(request: Request) -> Response:
        log.aggregates.append(orjson.loads(await request.body()))
        return _json(aggregate)

    async def root(_r: Request) -> Response:
        return _json({"status": "ok"})

    return Starlette(
        routes=[
            Route("/", root),
            Route("/run", run, methods=["POST"]),
            Route("/aggregate_metrics", aggregate_metrics, methods=["POST"]),
        ]
    )
