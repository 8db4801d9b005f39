"""example_single_tool_call over real HTTP: recorded rewards via ``/verify``, the tool, bad input, and full
episodes through ``simple_agent`` with the stub model replaying the recorded calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardgym.environments.example_single_tool_call.app import ExampleSingleToolCallServer
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

NAME = "example_single_tool_call"
ROOT = Path(__file__).resolve().parents[1]


def _recorded() -> list[Recorded]:
    return recorded_examples(ROOT / "data")


@pytest.fixture
def env(serve: Serve) -> ThreadedServer:
    return serve(ExampleSingleToolCallServer({"name": NAME}))


def test_registered_and_configured_from_the_yaml() -> None:
    server = shipped_server(ExampleSingleToolCallServer, ROOT, NAME)
    assert server.config.domain == "agent"
    with pytest.raises(ConfigError, match=rf"{NAME}\.grading_mode: unknown field"):
        ExampleSingleToolCallServer({"name": NAME, "grading_mode": "x"})


def test_tool_declaration_equals_the_rows() -> None:
    server = ExampleSingleToolCallServer({"name": NAME})
    declared = [spec.function_tool(strict=True).model_dump(mode="json") for spec in server.tools]
    for row in read_jsonl(ROOT / "data" / "example.jsonl"):
        assert declared == row["responses_create_params"]["tools"]


def test_http_compatibility_with_recorded_rollouts(env: ThreadedServer) -> None:
    assert call(env.url, "GET", "/reverify_mode").json() == "stateless"
    assert replay_recorded_rollouts(env.url, _recorded(), fields=("reward", "response"))


def test_tool_over_http(env: ThreadedServer) -> None:
    reply = call(env.url, "POST", "/get_weather", json={"city": "Tokyo"})
    assert (reply.status, reply.body) == (
        200,
        b'{"city":"Tokyo","weather_description":"The weather in Tokyo is cold."}',
    )
    missing = call(env.url, "POST", "/get_weather", json={})
    assert missing.status == 422
    assert ["body", "city"] in [d["loc"] for d in missing.json()["detail"]]
    assert call(env.url, "POST", "/no_such_tool", json={}).status == 404


def test_recorded_episodes_through_simple_agent(
    env: ThreadedServer, serve: Serve, scripted_model: Scripted
) -> None:
    runner, model = scripted_model
    agent = serve_agent(serve, NAME, env.url, runner.url)
    outcomes = replay_through_agent(agent.url, model, _recorded(), fields=("reward",))
    assert outcomes


def test_malformed_arguments_and_unknown_tool_reach_the_model(
    env: ThreadedServer, serve: Serve, scripted_model: Scripted
) -> None:
    runner, app = scripted_model
    agent = serve_agent(serve, NAME, env.url, runner.url)
    calls = [("get_weather", "{not json"), ("no_such_tool", "{}"), ("get_weather", '{"city": "Oslo"}')]
    app.state.mode = "script"
    app.state.script = [
        {
            "output": [
                {"type": "function_call", "call_id": f"c{i}", "name": name, "arguments": arguments}
                for i, (name, arguments) in enumerate(calls)
            ]
        },
        {
            "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}
            ]
        },
    ]
    row = read_jsonl(ROOT / "data" / "example.jsonl")[0]
    reply = call(agent.url, "POST", "/run", json=row)
    assert reply.status == 200, reply.body
    outputs = [i["output"] for i in reply.json()["response"]["output"] if i["type"] == "function_call_output"]
    assert "Invalid tool call arguments" in outputs[0] and "JSONDecodeError" in outputs[0]
    assert json.loads(outputs[1])["detail"] == "Not Found"
    assert json.loads(outputs[2]) == {"city": "Oslo", "weather_description": "The weather in Oslo is cold."}
    assert len(app.requests) == 2  # the episode went on after the bad calls
    assert reply.json()["reward"] == 1.0
