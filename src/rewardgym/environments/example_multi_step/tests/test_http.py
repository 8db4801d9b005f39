"""example_multi_step over real HTTP: recorded rewards and diagnostics via ``/verify``, the tools, bad input,
metrics, and full episodes through ``simple_agent`` with the stub model replaying the recorded calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rewardgym.environments.example_multi_step.app import ExampleMultiStepServer
from rewardgym.environments.example_multi_step.tests.test_example_multi_step import (
    EXTRAS,
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

NAME = "example_multi_step"
ROOT = Path(__file__).resolve().parents[1]
ROW = read_jsonl(ROOT / "data" / "example.jsonl")[0]


def _recorded() -> list[Recorded]:
    return recorded_examples(ROOT / "data")


@pytest.fixture
def env(serve: Serve) -> ThreadedServer:
    return serve(ExampleMultiStepServer({"name": NAME}))


def test_registered_and_configured_from_the_yaml() -> None:
    server = shipped_server(ExampleMultiStepServer, ROOT, NAME)
    assert server.config.description == "Multi-step tool calling"
    with pytest.raises(ConfigError, match=rf"{NAME}\.max_steps: unknown field"):
        ExampleMultiStepServer({"name": NAME, "max_steps": 3})


def _as_served(tool: dict[str, Any]) -> dict[str, Any]:
    """A row's tool without what the server's declarations drop: the per-property ``title`` and the
    description's trailing newline (see README)."""
    parameters = tool["parameters"]
    properties = {
        key: {k: v for k, v in schema.items() if k != "title"}
        for key, schema in parameters["properties"].items()
    }
    served = parameters | {"properties": properties}
    return tool | {"parameters": served, "description": tool["description"].strip()}


def test_tool_declarations_equal_the_rows() -> None:
    server = ExampleMultiStepServer({"name": NAME})
    declared = [spec.function_tool(strict=True).model_dump(mode="json") for spec in server.tools]
    for row in read_jsonl(ROOT / "data" / "example.jsonl"):
        assert declared == [_as_served(tool) for tool in row["responses_create_params"]["tools"]]


def test_http_compatibility_with_recorded_rollouts(env: ThreadedServer) -> None:
    assert call(env.url, "GET", "/reverify_mode").json() == "stateless"
    assert replay_recorded_rollouts(env.url, _recorded(), fields=("reward", *EXTRAS))


def test_tools_over_http(env: ThreadedServer) -> None:
    reply = call(env.url, "POST", "/get_synonym_value", json={"synonym": "Blazing"})
    assert (reply.status, reply.json()) == (200, {"synonym_value": 711})
    reply = call(env.url, "POST", "/extract_synonym_values", json={"synonym_values": [711, 407]})
    assert (reply.status, reply.json()) == (200, {"success": True})
    bad = call(env.url, "POST", "/extract_synonym_values", json={"synonym_values": ["x"]})
    assert bad.status == 422
    assert ["body", "synonym_values", 0] in [d["loc"] for d in bad.json()["detail"]]


def test_aggregate_metrics(env: ThreadedServer) -> None:
    rows = [
        {"_ng_task_index": t, "_ng_rollout_index": r, "reward": reward, "accuracy": reward == 1.0}
        for t, rewards in enumerate([(1.0, 0.0), (0.0, 0.0)])
        for r, reward in enumerate(rewards)
    ]
    reply = call(env.url, "POST", "/aggregate_metrics", json={"verify_responses": rows})
    assert reply.status == 200
    body = reply.json()
    assert body["agent_metrics"]["pass@2/accuracy"] == 50.0
    assert body["key_metrics"] == {
        "mean/reward": 0.25,
        "mean/accuracy": 0.25,
        "pass@2/accuracy": 50.0,
        "pass@1[avg-of-2]/accuracy": 25.0,
    }


def test_recorded_episodes_through_simple_agent(
    env: ThreadedServer, serve: Serve, scripted_model: Scripted
) -> None:
    runner, model = scripted_model
    agent = serve_agent(serve, NAME, env.url, runner.url)
    outcomes = replay_through_agent(agent.url, model, _recorded(), fields=("reward", "parsed_synonym_values"))
    assert outcomes


def test_malformed_arguments_and_unknown_tool_reach_the_model(
    env: ThreadedServer, serve: Serve, scripted_model: Scripted
) -> None:
    runner, app = scripted_model
    agent = serve_agent(serve, NAME, env.url, runner.url)
    app.state.mode = "script"
    app.state.script = [
        {"output": [_call("c0", "get_synonym_value", "{not json"), _call("c1", "no_such_tool", "{}")]},
        {"output": [_call("c2", "extract_synonym_values", '{"synonym_values": [711, 407]}')]},
        {"output": [_message("done")]},
    ]
    reply = call(agent.url, "POST", "/run", json=ROW)
    assert reply.status == 200, reply.body
    outputs = [i["output"] for i in reply.json()["response"]["output"] if i["type"] == "function_call_output"]
    assert "Invalid tool call arguments" in outputs[0] and "JSONDecodeError" in outputs[0]
    assert json.loads(outputs[1])["detail"] == "Not Found"
    assert json.loads(outputs[2]) == {"success": True}
    assert len(app.requests) == 3  # the episode went on after the bad calls
    assert reply.json()["reward"] == 1.0
