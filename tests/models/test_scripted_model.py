"""The ``scripted`` model type over real HTTP: replies from a list (cycled), whole turns, a function, and
its config checks; and a ``simple_agent`` episode with tools against it (no upstream process)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rewardgym.environments.example_single_tool_call.app import ExampleSingleToolCallServer
from rewardgym.errors import ConfigError
from rewardgym.models.scripted import ScriptedModel
from rewardgym.registry import lookup
from rewardgym.testing import ThreadedServer, call, function_call, read_jsonl, serve_agent
from tests.conftest import REPO_ROOT

Serve = Callable[[Any], ThreadedServer]


def _text(reply: Any) -> str:
    return str(reply.json()["output"][0]["content"][0]["text"])


def test_answers_cycle_in_order(serve: Serve) -> None:
    model = serve(ScriptedModel({"name": "policy_model", "answers": ["one", "two"]}))
    texts = [_text(call(model.url, "POST", "/v1/responses", json={"input": "q"})) for _ in range(3)]
    assert texts == ["one", "two", "one"]
    reply = call(model.url, "POST", "/v1/responses", json={"input": "q"})
    assert reply.json()["usage"]["total_tokens"] > 0 and reply.json()["model"] == "scripted"
    assert call(model.url, "GET", "/v1/models").json()["data"][0]["id"] == "scripted"


def test_a_function_answers_each_request(serve: Serve) -> None:
    config = {"name": "policy_model", "function": "tests.models.scripted_answers:by_length"}
    model = serve(ScriptedModel(config))
    assert _text(call(model.url, "POST", "/v1/responses", json={"input": "abcd"})) == "Answer: 4"
    assert _text(call(model.url, "POST", "/v1/responses", json={"input": "ab"})) == "Answer: 2"


def test_config_checks() -> None:
    assert lookup("responses_api_models", "scripted") is ScriptedModel
    with pytest.raises(ConfigError, match="answers"):
        ScriptedModel({"name": "m", "answers": []})
    with pytest.raises(ConfigError, match="function"):
        ScriptedModel({"name": "m", "function": "no_colon"})
    with pytest.raises(ConfigError, match="is not a callable"):
        ScriptedModel({"name": "m", "function": "tests.models.scripted_answers:NOT_CALLABLE"})
    with pytest.raises(ConfigError, match="cannot import"):
        ScriptedModel({"name": "m", "function": "no_such_module_here:f"})


def test_a_tool_episode_through_simple_agent(serve: Serve) -> None:
    name = "example_single_tool_call"
    env = serve(ExampleSingleToolCallServer({"name": name}))
    turns = [[function_call("c1", "get_weather", '{"city": "Oslo"}')], "It is cold in Oslo."]
    model = serve(ScriptedModel({"name": "policy_model", "answers": turns}))
    agent = serve_agent(serve, name, env.url, model.url)
    row = read_jsonl(REPO_ROOT / "src/rewardgym/environments" / name / "data" / "example.jsonl")[0]
    reply = call(agent.url, "POST", "/run", json=row)
    assert reply.status == 200, reply.body
    items = reply.json()["response"]["output"]
    assert [item["type"] for item in items] == ["function_call", "function_call_output", "message"]
    assert "Oslo" in items[1]["output"] and reply.json()["reward"] == 1.0
