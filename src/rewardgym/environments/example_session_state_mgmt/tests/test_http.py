"""example_session_state_mgmt over real HTTP: recorded episodes replayed in one cookie session (seed → tools →
verify), session isolation, bad input, and full episodes through ``simple_agent`` with the stub model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardgym.environments.example_session_state_mgmt.app import ExampleSessionStateMgmtServer
from rewardgym.environments.example_session_state_mgmt.tests.test_example_session_state_mgmt import (
    _matched,
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
    replay_through_agent,
    serve_agent,
    shipped_server,
)
from rewardgym.testing.items import function_call as _call
from rewardgym.testing.items import message as _message
from rewardgym.testing.items import response as _response
from rewardgym.testing.replay import verify_keys as _stamps_removed

NAME = "example_session_state_mgmt"
ROOT = Path(__file__).resolve().parents[1]
ROW = read_jsonl(ROOT / "data" / "example.jsonl")[0]  # initial 3, expected 6


def _recorded() -> list[Recorded]:
    return recorded_examples(ROOT / "data")


@pytest.fixture
def env(serve: Serve) -> ThreadedServer:
    return serve(ExampleSessionStateMgmtServer({"name": NAME}))


def test_registered_and_configured_from_the_yaml() -> None:
    server = shipped_server(ExampleSessionStateMgmtServer, ROOT, NAME)
    assert server.config.domain == "agent"
    server = ExampleSessionStateMgmtServer({"name": NAME, "session_ttl_s": 60, "max_sessions": 10})
    assert (server.sessions.ttl_s, server.sessions.max_sessions) == (60, 10)
    with pytest.raises(ConfigError, match=rf"{NAME}\.initial_count: unknown field"):
        ExampleSessionStateMgmtServer({"name": NAME, "initial_count": 3})


def test_tool_declarations_equal_the_rows() -> None:
    server = ExampleSessionStateMgmtServer({"name": NAME})
    declared = [spec.function_tool(strict=True).model_dump(mode="json") for spec in server.tools]
    for row in read_jsonl(ROOT / "data" / "example.jsonl"):
        assert declared == row["responses_create_params"]["tools"]


def test_http_compatibility_with_recorded_rollouts(env: ThreadedServer) -> None:
    """Each recorded episode is replayed in its own session: seed, every recorded call in order, verify."""
    assert call(env.url, "GET", "/reverify_mode").json() == "unsupported"
    table = [f"{NAME} row | ours reward (final counter) | NeMo Gym reward"]
    for index, row, rollout in _matched():
        seeded = call(env.url, "POST", "/seed_session", json=row)
        assert (seeded.status, seeded.json()) == (200, {})
        cookies = seeded.cookies
        output = rollout["response"]["output"]
        recorded = {
            i["call_id"]: json.loads(i["output"]) for i in output if i["type"] == "function_call_output"
        }
        for item in output:
            if item["type"] == "function_call":
                reply = call(
                    env.url, "POST", f"/{item['name']}", data=item["arguments"].encode(), cookies=cookies
                )
                assert (reply.status, reply.json()) == (200, recorded[item["call_id"]])
                cookies = reply.cookies
        counter = call(env.url, "POST", "/get_counter_value", json={}, cookies=cookies).json()["count"]
        reply = call(
            env.url, "POST", "/verify", json=row | {"response": rollout["response"]}, cookies=cookies
        )
        assert reply.status == 200, reply.body
        answer = reply.json()
        assert set(answer) == _stamps_removed(rollout)
        assert answer["reward"] == rollout["reward"]
        # Without the episode's session the counter is unknown: reward 0 (hence reverify is unsupported).
        alone = call(env.url, "POST", "/verify", json=row | {"response": rollout["response"]})
        assert alone.json()["reward"] == 0.0
        table.append(f"{index} | {answer['reward']} ({counter}) | {rollout['reward']}")
    print("\n" + "\n".join(table))


def test_sessions_are_isolated(env: ThreadedServer) -> None:
    """docs/reference/environments.md §6 test table, with a client that never stores cookies."""
    first = call(env.url, "POST", "/get_counter_value", json={})
    assert first.json() == {"count": 0}
    mine = first.cookies
    assert call(env.url, "POST", "/increment_counter", json={"count": 2}, cookies=mine).json() == {
        "success": True
    }
    assert call(env.url, "POST", "/get_counter_value", json={}, cookies=mine).json() == {"count": 2}
    fresh = call(env.url, "POST", "/increment_counter", json={"count": 4})
    other = fresh.cookies
    assert call(env.url, "POST", "/get_counter_value", json={}, cookies=other).json() == {"count": 4}
    call(env.url, "POST", "/increment_counter", json={"count": 3}, cookies=other)
    assert call(env.url, "POST", "/get_counter_value", json={}, cookies=other).json() == {"count": 7}
    assert call(env.url, "POST", "/get_counter_value", json={}, cookies=mine).json() == {"count": 2}


def test_second_seed_does_not_overwrite(env: ThreadedServer) -> None:
    cookies = call(env.url, "POST", "/seed_session", json=ROW).cookies
    call(env.url, "POST", "/increment_counter", json={"count": 3}, cookies=cookies)
    call(env.url, "POST", "/seed_session", json=ROW | {"initial_count": 100}, cookies=cookies)
    reply = call(env.url, "POST", "/verify", json=ROW | {"response": _response([])}, cookies=cookies)
    assert reply.json()["reward"] == 1.0  # 3 + 3 == expected 6, with no assistant message at all


def test_bad_input(env: ThreadedServer) -> None:
    seed = call(env.url, "POST", "/seed_session", json={k: v for k, v in ROW.items() if k != "initial_count"})
    assert seed.status == 422
    assert ["body", "initial_count"] in [d["loc"] for d in seed.json()["detail"]]
    # Seeded but nothing done and no assistant message: the counter (3) is not the expected 6.
    cookies = call(env.url, "POST", "/seed_session", json=ROW).cookies
    reply = call(env.url, "POST", "/verify", json=ROW | {"response": _response([])}, cookies=cookies)
    assert (reply.status, reply.json()["reward"]) == (200, 0.0)
    bad_tool = call(env.url, "POST", "/increment_counter", json={"count": "many"}, cookies=cookies)
    assert bad_tool.status == 422
    assert ["body", "count"] in [d["loc"] for d in bad_tool.json()["detail"]]


def test_recorded_episodes_through_simple_agent(
    env: ThreadedServer, serve: Serve, scripted_model: Scripted
) -> None:
    """Cookies are threaded seed → tools → verify by the agent: the counters reach the recorded totals."""
    runner, model = scripted_model
    agent = serve_agent(serve, NAME, env.url, runner.url)
    outcomes = replay_through_agent(agent.url, model, _recorded(), fields=("reward",))
    assert outcomes


def test_malformed_arguments_and_unknown_tool_then_the_session_continues(
    env: ThreadedServer, serve: Serve, scripted_model: Scripted
) -> None:
    runner, app = scripted_model
    agent = serve_agent(serve, NAME, env.url, runner.url)
    app.state.mode = "script"
    app.state.script = [
        {
            "output": [
                _call("c0", "increment_counter", "{not json"),
                _call("c1", "no_such_tool", "{}"),
                _call("c2", "increment_counter", '{"count": 3}'),
            ]
        },
        {"output": [_call("c3", "get_counter_value", "{}")]},
        {"output": [_message("The count is 6.")]},
    ]
    reply = call(agent.url, "POST", "/run", json=ROW)
    assert reply.status == 200, reply.body
    outputs = [i["output"] for i in reply.json()["response"]["output"] if i["type"] == "function_call_output"]
    assert "Invalid tool call arguments" in outputs[0] and "JSONDecodeError" in outputs[0]
    assert json.loads(outputs[1])["detail"] == "Not Found"
    assert [json.loads(o) for o in outputs[2:]] == [{"success": True}, {"count": 6}]  # 3 seeded + 3
    assert len(app.requests) == 3
    assert reply.json()["reward"] == 1.0
