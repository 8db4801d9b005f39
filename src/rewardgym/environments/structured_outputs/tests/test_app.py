"""structured_outputs over real HTTP: recorded rollouts via /verify and simple_agent, tool-call episodes.

Every server is real and on a 127.0.0.1 port: the environment, ``simple_agent`` (under the instance name the
rows' ``agent_ref`` uses) and a scripted model server (:class:`ScriptedModelServer`) that replays model turns.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from rewardgym.agents.simple_agent import SimpleAgent
from rewardgym.config import load_config_from_flags
from rewardgym.environments.structured_outputs.app import StructuredOutputsServer
from rewardgym.environments.structured_outputs.tests.test_structured_outputs import (
    ROLLOUTS,
    _lines,
    _message,
    schema_from_prompt,
)
from rewardgym.environments.structured_outputs.verifier import DescriptiveFields
from rewardgym.errors import ConfigError
from rewardgym.launch.child_spec import server_class
from rewardgym.launch.from_config import child_specs, validate_specs
from rewardgym.launch.serve import ThreadedServer
from rewardgym.protocol import Response
from rewardgym.registry import lookup
from rewardgym.testing import COLLECTOR_COLUMNS, ScriptedModelServer, post

STAMPS = COLLECTOR_COLUMNS
OUR_COLUMNS = {"schema_str", "schema_type", "error_type", "error_message", *DescriptiveFields.model_fields}
"""Columns current NeMo Gym and we return that the 2025-10 recording (``reward`` only) lacks (README)."""
AGENT = "structured_outputs_v4_simple_agent"
POLICY = ["++policy_base_url=http://127.0.0.1:9/v1", "++policy_api_key=dummy", "++policy_model_name=m"]
QUIET = {"log_level": "ERROR"}
EXAMPLE_ROWS = _lines("example.jsonl")
ROW0_PAYLOAD = {
    "name": "Dizer Kola",
    "native_name": "ديزركلا",
    "romanized_name": None,
    "settlement_type": "village",
    "country": "Iran",
    "province": "Mazandaran",
    "county": "Babol",
    "bakhsh": "Bandpey-ye Gharbi",
    "rural_district": "Khvosh Rud",
    "coordinates": {"latitude": 36.55694, "longitude": 51.79389},
    "population_total": 241,
    "population_year": 2006,
    "number_of_families": 61,
    "timezone_standard": "IRST",
    "timezone_dst": None,
}
"""A payload valid for ``example.jsonl`` row 0's schema (values from its reference text)."""


@pytest.fixture(scope="module")
def world() -> Iterator[dict[str, Any]]:
    """The environment, the scripted model and a simple_agent wired to both, each on a real port."""
    model = ScriptedModelServer({"name": "policy_model", **QUIET})
    env_server = StructuredOutputsServer({"name": "structured_outputs", **QUIET})
    with ThreadedServer(env_server) as env, ThreadedServer(model) as model_url:
        agent = SimpleAgent(
            {
                "name": AGENT,
                "resources_server": {"type": "resources_servers", "name": "structured_outputs"},
                "model_server": {"type": "responses_api_models", "name": "policy_model"},
                "peers": {"structured_outputs": env.url, "policy_model": model_url.url},
                **QUIET,
            }
        )
        with ThreadedServer(agent) as agent_url:
            yield {"env": env.url, "agent": agent_url.url, "model": model}


@pytest.fixture
def model(world: dict[str, Any]) -> ScriptedModelServer:
    scripted: ScriptedModelServer = world["model"]
    scripted.script.clear()
    scripted.requests.clear()
    return scripted


def recorded_row(rollout: dict[str, Any]) -> dict[str, Any]:
    """The text-mode row of a recorded rollout: its prompt and the schema the prompt shows (README)."""
    params = rollout["responses_create_params"]
    return {"responses_create_params": params, "schema_str": json.dumps(schema_from_prompt(params))}


def call(name: str, arguments: str, call_id: str = "c1") -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


async def test_http_compatibility_with_recorded_rollouts(world: dict[str, Any]) -> None:
    table = [
        "structured_outputs over HTTP: rollout (file order) | ours reward (error_type) | NeMo Gym | note"
    ]
    for index, rollout in enumerate(ROLLOUTS):
        reply = await post(
            f"{world['env']}/verify", {**recorded_row(rollout), "response": rollout["response"]}
        )
        assert reply.status == 200, reply.text()
        ours = reply.json()
        assert set(ours) - OUR_COLUMNS == set(rollout) - STAMPS
        assert ours["reward"] == rollout["reward"]
        assert (ours["error_type"] is None) == (rollout["reward"] == 1.0)
        assert Response.model_validate(ours["response"]) == Response.model_validate(rollout["response"])
        note = "match" if ours["reward"] == 1.0 else "match (code fence → parse_error)"
        table.append(f"  {index} | {ours['reward']} ({ours['error_type']}) | {rollout['reward']} | {note}")
    print("\n" + "\n".join(table))


async def test_recorded_episodes_through_simple_agent(
    world: dict[str, Any], model: ScriptedModelServer
) -> None:
    table = ["structured_outputs episodes (simple_agent + scripted model): rollout | ours | NeMo Gym"]
    for index, rollout in enumerate(ROLLOUTS):
        model.script[:] = [rollout["response"]["output"]]
        model.requests.clear()
        reply = await post(f"{world['agent']}/run", recorded_row(rollout))
        assert reply.status == 200, reply.text()
        ours = reply.json()
        assert ours["reward"] == rollout["reward"]
        assert len(model.requests) == 1
        table.append(f"  {index} | {ours['reward']} ({ours['error_type']}) | {rollout['reward']}")
    print("\n" + "\n".join(table))


async def test_tool_call_row_episode_scores_the_single_call(
    world: dict[str, Any], model: ScriptedModelServer
) -> None:
    row = EXAMPLE_ROWS[0]
    arguments = json.dumps({row["tool_payload_key"]: ROW0_PAYLOAD}, ensure_ascii=False)
    model.script[:] = [[call(row["tool_name"], arguments)], [_message("Done.")]]
    reply = await post(f"{world['agent']}/run", row)
    assert reply.status == 200, reply.text()
    ours = reply.json()
    assert (ours["reward"], ours["error_type"]) == (1.0, None)
    tool_output = ours["response"]["output"][1]
    assert orjson.loads(tool_output["output"])["detail"] == "Not Found"  # the call is the answer, not run
    assert model.requests[1]["input"][-1] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": tool_output["output"],
    }
    assert {name: ours[name] for name in DescriptiveFields.model_fields} == {
        name: row.get(name) for name in DescriptiveFields.model_fields
    }


async def test_malformed_tool_arguments_go_back_to_the_model(
    world: dict[str, Any], model: ScriptedModelServer
) -> None:
    row = EXAMPLE_ROWS[0]
    model.script[:] = [[call(row["tool_name"], '{"extraction": {')], [_message("I could not do it.")]]
    reply = await post(f"{world['agent']}/run", row)
    assert reply.status == 200, reply.text()
    ours = reply.json()
    error = orjson.loads(ours["response"]["output"][1]["output"])["error"]
    assert "Invalid tool call arguments" in error and "JSONDecodeError" in error
    assert len(model.requests) == 2
    assert (ours["reward"], ours["error_type"]) == (0.0, "tool_arguments_parse_error")


def test_registered_and_shipped_config_serves_the_rows_agent_ref(tmp_path: Path) -> None:
    assert lookup("resources_servers", "structured_outputs") is StructuredOutputsServer
    cfg = load_config_from_flags(
        resources_servers=["structured_outputs"],
        model_types=["openai_model"],
        overrides=POLICY,
        env_yaml=False,
        cwd=tmp_path,
    )
    assert {row["agent_ref"]["name"] for row in EXAMPLE_ROWS} == {AGENT}
    assert AGENT in cfg.instances
    specs = child_specs(cfg, log_dir=tmp_path)
    validate_specs(specs)
    spec = next(spec for spec in specs if spec.kind == "resources_servers")
    built = server_class(spec.kind, spec.implementation)(spec.config)
    assert isinstance(built, StructuredOutputsServer)
    assert built.config.xml_coerce_types is True
    with pytest.raises(ConfigError, match=r"so\.xml_coerce: unknown field"):
        StructuredOutputsServer({"name": "so", "xml_coerce": False})
