"""xlam_fc over real HTTP: recorded rollouts via /verify and as full simple_agent episodes, tool errors.

Every server is real and on a 127.0.0.1 port: the environment, ``simple_agent``, and a scripted model server
(:class:`ScriptedModelServer`) that replays the model turns of a recorded trajectory.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from rewardgym.agents.simple_agent import SimpleAgent
from rewardgym.environments.xlam_fc.app import XlamFcServer
from rewardgym.environments.xlam_fc.tests.test_xlam_fc import COLUMNS, ROLLOUTS, ROWS_BY_QUERY, _call, _query
from rewardgym.launch.serve import ThreadedServer
from rewardgym.protocol import Response
from rewardgym.testing import COLLECTOR_COLUMNS, ScriptedModelServer, post

STAMPS = COLLECTOR_COLUMNS
POLICY = ["++policy_base_url=http://127.0.0.1:9/v1", "++policy_api_key=dummy", "++policy_model_name=m"]
QUIET = {"log_level": "ERROR"}


@pytest.fixture(scope="module")
def world() -> Iterator[dict[str, Any]]:
    """The environment, the scripted model and a simple_agent wired to both, each on a real port."""
    model = ScriptedModelServer({"name": "policy_model", **QUIET})
    with (
        ThreadedServer(XlamFcServer({"name": "xlam_fc", **QUIET})) as env,
        ThreadedServer(model) as model_url,
    ):
        peers = {"xlam_fc": env.url, "policy_model": model_url.url}
        agent = SimpleAgent(
            {
                "name": "xlam_fc_simple_agent",
                "resources_server": {"type": "resources_servers", "name": "xlam_fc"},
                "model_server": {"type": "responses_api_models", "name": "policy_model"},
                "peers": peers,
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


def model_turns(output: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The model's outputs of a recorded trajectory, one list per model call (tool outputs split them)."""
    turns: list[list[dict[str, Any]]] = [[]]
    for item in output:
        if item["type"] == "function_call_output":
            if turns[-1]:
                turns.append([])
        else:
            turns[-1].append(item)
    return [turn for turn in turns if turn]


def ordered_pairs() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    pairs = [(ROWS_BY_QUERY[_query(rollout)], rollout) for rollout in ROLLOUTS]
    return sorted(pairs, key=lambda pair: int(pair[0]["id"]))


async def test_http_compatibility_with_recorded_rollouts(world: dict[str, Any]) -> None:
    table = ["xlam_fc over HTTP: row id | ours reward (expected/predicted/correct) | NeMo Gym | note"]
    for row, rollout in ordered_pairs():
        reply = await post(f"{world['env']}/verify", {**row, "response": rollout["response"]})
        assert reply.status == 200, reply.text()
        ours = reply.json()
        assert set(ours) == set(rollout) - STAMPS
        assert ours["reward"] == rollout["reward"]
        for column in COLUMNS:
            assert ours[column] == rollout[column], column
        assert Response.model_validate(ours["response"]) == Response.model_validate(rollout["response"])
        counts = f"{ours['num_expected']}/{ours['num_predicted']}/{ours['num_correct']}"
        table.append(f"  {row['id']} | {ours['reward']} ({counts}) | {rollout['reward']} | match")
    print("\n" + "\n".join(table))


async def test_recorded_episodes_through_simple_agent(
    world: dict[str, Any], model: ScriptedModelServer
) -> None:
    table = [
        "xlam_fc episodes (simple_agent + scripted model): row id | ours reward | NeMo Gym | tool outputs"
    ]
    for row, rollout in ordered_pairs():
        turns = model_turns(rollout["response"]["output"])
        model.script[:] = turns
        model.requests.clear()
        reply = await post(f"{world['agent']}/run", row)
        assert reply.status == 200, reply.text()
        ours = reply.json()
        assert ours["reward"] == rollout["reward"]
        for column in COLUMNS:
            assert ours[column] == rollout[column], column
        assert len(model.requests) == len(turns)
        outputs = [item for item in ours["response"]["output"] if item["type"] == "function_call_output"]
        recorded = [item for item in rollout["response"]["output"] if item["type"] == "function_call_output"]
        assert [o["call_id"] for o in outputs] == [o["call_id"] for o in recorded]
        for output in outputs:  # no tool is implemented: the model reads the 404 body, as in NeMo Gym
            assert orjson.loads(output["output"])["detail"] == "Not Found"
        assert model.requests[1]["input"][-1]["type"] == "function_call_output"
        table.append(f"  {row['id']} | {ours['reward']} | {rollout['reward']} | {len(outputs)} x 404 body")
    print("\n" + "\n".join(table))


async def test_malformed_arguments_are_answered_to_the_model(
    world: dict[str, Any], model: ScriptedModelServer
) -> None:
    row = ROWS_BY_QUERY[_query(ROLLOUTS[0])]
    expected = row["expected_answers"][0]
    model.script[:] = [
        [_call(expected["name"], '{"type": "beta"', "c1")],
        [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sorry."}]}],
    ]
    reply = await post(f"{world['agent']}/run", row)
    assert reply.status == 200, reply.text()
    ours = reply.json()
    error = orjson.loads(ours["response"]["output"][1]["output"])["error"]
    assert "Invalid tool call arguments" in error and "JSONDecodeError" in error
    assert len(model.requests) == 2  # the episode went on after the error
    assert (ours["reward"], ours["num_predicted"], ours["num_correct"]) == (0.0, 1, 0)
    assert ours["predicted_calls"] == [{"name": expected["name"], "arguments": {}}]


def test_it_declares_no_tools() -> None:
    assert XlamFcServer({"name": "xlam_fc"}).tools == []  # the rows' tools are the model's, not served
