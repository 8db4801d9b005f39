"""example_tool_call_multireward over real HTTP: recorded rewards and components via ``/verify``, the tool,
bad input, metrics, and full episodes through ``simple_agent`` with the stub model replaying the recorded
calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardgym.environments.example_tool_call_multireward.app import ExampleToolCallMultirewardServer
from rewardgym.environments.example_tool_call_multireward.tests.test_example_tool_call_multireward import (
    EXTRAS,
    TOOL,
)
from rewardgym.errors import ConfigError
from rewardgym.testing import (
    Recorded,
    Scripted,
    Serve,
    ThreadedServer,
    call,
    read_jsonl,
    recorded_examples,
    replay_recorded_rollouts,
    replay_through_agent,
    serve_agent,
    shipped_server,
)
from rewardgym.testing.items import function_call as _call
from rewardgym.testing.items import message as _message

NAME = "example_tool_call_multireward"
ROOT = Path(__file__).resolve().parents[1]
ROW = read_jsonl(ROOT / "data" / "example.jsonl")[0]  # San Francisco


def _recorded() -> list[Recorded]:
    return recorded_examples(ROOT / "data")


@pytest.fixture
def env(serve: Serve) -> ThreadedServer:
    return serve(ExampleToolCallMultirewardServer({"name": NAME}))


def test_registered_and_configured_from_the_yaml() -> None:
    server = shipped_server(ExampleToolCallMultirewardServer, ROOT, NAME)
    assert server.config.domain == "agent"
    with pytest.raises(ConfigError, match=rf"{NAME}\.expected_call: unknown field"):
        ExampleToolCallMultirewardServer({"name": NAME, "expected_call": {}})


def test_tool_declaration_equals_the_rows() -> None:
    server = ExampleToolCallMultirewardServer({"name": NAME})
    declared = [spec.function_tool(strict=True).model_dump(mode="json") for spec in server.tools]
    assert declared == [TOOL]
    for row in read_jsonl(ROOT / "data" / "example.jsonl"):
        assert declared == row["responses_create_params"]["tools"]


def test_http_compatibility_with_recorded_rollouts(env: ThreadedServer) -> None:
    assert call(env.url, "GET", "/reverify_mode").json() == "stateless"
    assert replay_recorded_rollouts(env.url, _recorded(), fields=("reward", *EXTRAS))


def test_tool_over_http(env: ThreadedServer) -> None:
    reply = call(env.url, "POST", "/get_weather", json={"city": "Oslo"})
    assert (reply.status, reply.json()) == (
        200,
        {"city": "Oslo", "weather_description": "The weather in Oslo is sunny."},
    )
    missing = call(env.url, "POST", "/get_weather", json={"town": "Oslo"})
    assert missing.status == 422
    assert ["body", "city"] in [d["loc"] for d in missing.json()["detail"]]


def test_aggregate_metrics(env: ThreadedServer) -> None:
    rows = [
        {"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 2.0, "correctness": 1.0, "schema_valid": 1.0},
        {"_ng_task_index": 0, "_ng_rollout_index": 1, "reward": 0.0, "correctness": 0.0, "schema_valid": 0.0},
    ]
    reply = call(env.url, "POST", "/aggregate_metrics", json={"verify_responses": rows})
    assert reply.status == 200
    metrics = reply.json()["agent_metrics"]
    assert metrics["pass@2/correctness"] == 100.0
    assert metrics["pass@1[avg-of-2]/schema_valid"] == 50.0
    assert metrics["pass@2/format"] == 0.0  # a missing component counts 0
    key = reply.json()["key_metrics"]
    assert key["mean/reward"] == 1.0 and key["pass@2/correctness"] == 100.0


def test_recorded_episodes_through_simple_agent(
    env: ThreadedServer, serve: Serve, scripted_model: Scripted
) -> None:
    runner, model = scripted_model
    agent = serve_agent(serve, NAME, env.url, runner.url)
    outcomes = replay_through_agent(agent.url, model, _recorded(), fields=("reward", "reward_components"))
    assert outcomes


def test_malformed_arguments_and_unknown_tool_reach_the_model(
    env: ThreadedServer, serve: Serve, scripted_model: Scripted
) -> None:
    runner, app = scripted_model
    agent = serve_agent(serve, NAME, env.url, runner.url)
    app.state.mode = "script"
    app.state.script = [
        {"output": [_call("c0", "get_weather", "{not json"), _call("c1", "no_such_tool", "{}")]},
        {"output": [_call("c2", "get_weather", '{"city": "San Francisco"}')]},
        {"output": [_message("It is sunny.")]},
    ]
    reply = call(agent.url, "POST", "/run", json=ROW)
    assert reply.status == 200, reply.body
    outputs = [i["output"] for i in reply.json()["response"]["output"] if i["type"] == "function_call_output"]
    assert "Invalid tool call arguments" in outputs[0] and "JSONDecodeError" in outputs[0]
    assert json.loads(outputs[1])["detail"] == "Not Found"
    assert json.loads(outputs[2])["weather_description"] == "The weather in San Francisco is sunny."
    assert len(app.requests) == 3  # the episode went on after the bad calls
    answer = reply.json()
    # The first call (invalid JSON) decides schema_valid; a later call is correct; three calls → no format.
    assert (answer["correctness"], answer["schema_valid"], answer["format"], answer["reward"]) == (
        1.0,
        0.0,
        0.0,
        1.0,
    )
