"""The resources-server base over real HTTP: sessions, tools, verify filtering, metrics, failsafe."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from rewardgym.protocol import SeedSessionRequest, VerifyRequest, VerifyResponse
from rewardgym.servers.errors import JudgeError
from rewardgym.servers.resources import ResourcesServer, ResourcesServerConfig
from rewardgym.servers.sessions import SessionStore
from rewardgym.servers.tools import tool
from tests.stubs.client import call
from tests.stubs.environments import CounterServer, ExactMatchServer, WeatherServer

RESPONSE = {
    "id": "resp_1",
    "created_at": 1.0,
    "model": "m",
    "object": "response",
    "output": [
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "content": [{"type": "output_text", "text": "So \\boxed{B}", "annotations": []}],
        }
    ],
}
PARAMS = {"input": [{"role": "user", "content": "Pick one"}]}


def test_counter_sessions_are_isolated(serve: Any) -> None:
    """docs/reference/environments.md §6 test table, with a client that never stores cookies."""
    srv = serve(CounterServer({"name": "counter"}))
    first = call(srv.url, "POST", "/get_counter_value", json={})
    assert first.json() == {"count": 0}
    cookies = first.cookies
    assert call(srv.url, "POST", "/increment_counter", json={"count": 2}, cookies=cookies).json() == {
        "success": True
    }
    assert call(srv.url, "POST", "/get_counter_value", json={}, cookies=cookies).json() == {"count": 2}

    fresh = call(srv.url, "POST", "/increment_counter", json={"count": 4})
    other = fresh.cookies
    assert call(srv.url, "POST", "/get_counter_value", json={}, cookies=other).json() == {"count": 4}
    call(srv.url, "POST", "/increment_counter", json={"count": 3}, cookies=other)
    assert call(srv.url, "POST", "/get_counter_value", json={}, cookies=other).json() == {"count": 7}
    assert call(srv.url, "POST", "/get_counter_value", json={}, cookies=cookies).json() == {"count": 2}


def test_seed_then_verify_in_one_session(serve: Any) -> None:
    srv = serve(CounterServer({"name": "counter"}))
    row = {"responses_create_params": PARAMS, "initial_count": 3, "expected_count": 6}
    seed = call(srv.url, "POST", "/seed_session", json=row)
    assert seed.status == 200 and seed.json() == {}
    cookies = seed.cookies
    call(srv.url, "POST", "/increment_counter", json={"count": 1}, cookies=cookies)
    call(srv.url, "POST", "/increment_counter", json={"count": 2}, cookies=cookies)
    verify = call(srv.url, "POST", "/verify", json={**row, "response": RESPONSE}, cookies=cookies)
    assert verify.json()["reward"] == 1.0
    assert set(verify.json()) == {
        "responses_create_params",
        "response",
        "reward",
    }  # expected_count not echoed
    no_session = call(srv.url, "POST", "/verify", json={**row, "response": RESPONSE})
    assert no_session.json()["reward"] == 0.0


def test_tool_errors_are_json_bodies(serve: Any) -> None:
    srv = serve(WeatherServer({"name": "weather"}))
    ok = call(srv.url, "POST", "/get_weather", json={"city": "SF"})
    assert ok.json() == {"city": "SF", "weather_description": "The weather in SF is cold."}
    bad = call(srv.url, "POST", "/get_weather", json={"town": "SF"})
    assert bad.status == 422
    assert ["body", "city"] in [d["loc"] for d in bad.json()["detail"]]
    unknown = call(srv.url, "POST", "/get_wether", json={})
    assert unknown.status == 404 and unknown.json()["detail"] == "Not Found"


def test_tool_schema_from_the_args_model() -> None:
    server = WeatherServer({"name": "weather"})
    [declared] = server.function_tools()
    assert declared.name == "get_weather"
    assert declared.description == "Current weather of a city."
    assert declared.parameters == {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city to look up."}},
        "required": ["city"],
        "additionalProperties": False,
    }


def test_tool_declaration_errors() -> None:
    class Args(BaseModel):
        x: int

    with pytest.raises(TypeError, match="async"):

        class Sync(ResourcesServer[ResourcesServerConfig]):
            @tool
            def sync_tool(self, args: Args) -> dict[str, Any]:
                return {}

        Sync({"name": "s"})
    with pytest.raises(TypeError, match="invalid tool name"):

        class Reserved(ResourcesServer[ResourcesServerConfig]):
            @tool(name="verify")
            async def clash(self, args: Args) -> dict[str, Any]:
                return {}

        Reserved({"name": "r"})


def test_verify_returns_only_declared_fields(serve: Any) -> None:
    srv = serve(ExactMatchServer({"name": "exact"}))
    row = {"responses_create_params": PARAMS, "expected_answer": "B", "uuid": "u-1", "options": [{"A": "x"}]}
    reply = call(srv.url, "POST", "/verify", json={**row, "response": RESPONSE})
    assert reply.status == 200
    body = reply.json()
    assert list(body) == [
        "responses_create_params",
        "response",
        "reward",
        "expected_answer",
        "extracted_answer",
    ]
    assert body["reward"] == 1.0 and body["extracted_answer"] == "B"
    empty = {**RESPONSE, "output": []}
    reply = call(srv.url, "POST", "/verify", json={**row, "response": empty})
    assert reply.json()["reward"] == 0.0
    assert reply.json()["extracted_answer"] is None  # nulls are kept


def test_verify_rejects_malformed_rows(serve: Any) -> None:
    srv = serve(ExactMatchServer({"name": "exact"}))
    bad_params = {"responses_create_params": {**PARAMS, "bogus": 1}, "response": RESPONSE}
    reply = call(srv.url, "POST", "/verify", json=bad_params)
    assert reply.status == 422
    assert ["body", "responses_create_params", "bogus"] in [d["loc"] for d in reply.json()["detail"]]
    reply = call(srv.url, "POST", "/seed_session", json={"nothing": 1})
    assert reply.status == 422


def test_seed_session_checks_what_the_server_reads(serve: Any) -> None:
    """The default no-op seed reads nothing: the row's shape is checked (the same 422s as a full validation
    would give) and its ``responses_create_params`` content is left to ``/run``, the model and ``/verify``;
    a server with its own seed request class gets the whole row validated."""
    plain = serve(ExactMatchServer({"name": "exact"}))
    assert ExactMatchServer._seed_reads_nothing()
    for body, kind in (({"nothing": 1}, "missing"), ({"responses_create_params": [1]}, "model_type")):
        reply = call(plain.url, "POST", "/seed_session", json=body)
        assert reply.status == 422
        assert [(d["type"], d["loc"]) for d in reply.json()["detail"]] == [
            (kind, ["body", "responses_create_params"])
        ]
    for not_an_object in ([1], "row"):
        assert call(plain.url, "POST", "/seed_session", json=not_an_object).status == 422
    reply = call(plain.url, "POST", "/seed_session", json={"responses_create_params": {**PARAMS, "bogus": 1}})
    assert (reply.status, reply.json()) == (200, {})
    assert reply.cookies  # the session is opened as before
    seeded = serve(_ReadsTheRow({"name": "seeded"}))
    assert not _ReadsTheRow._seed_reads_nothing()
    reply = call(
        seeded.url, "POST", "/seed_session", json={"responses_create_params": {**PARAMS, "bogus": 1}}
    )
    assert reply.status == 422
    assert ["body", "responses_create_params", "bogus"] in [d["loc"] for d in reply.json()["detail"]]
    assert call(seeded.url, "POST", "/seed_session", json={"responses_create_params": PARAMS}).json() == {
        "input_items": 1
    }


class _ReadsTheRow(ResourcesServer[ResourcesServerConfig]):
    async def seed_session(self, body: SeedSessionRequest) -> dict[str, int]:
        params = body.responses_create_params
        return {"input_items": len(params.input) if isinstance(params.input, list) else 0}


def test_reverify_mode(serve: Any) -> None:
    assert call(serve(ExactMatchServer({"name": "e"})).url, "GET", "/reverify_mode").json() == "stateless"
    assert call(serve(WeatherServer({"name": "w"})).url, "GET", "/reverify_mode").json() == "unknown"


def test_aggregate_metrics_endpoint(serve: Any) -> None:
    srv = serve(ExactMatchServer({"name": "exact"}))
    rows = []
    for task, rewards in enumerate([[1, 0], [0, 0]]):
        for rollout, reward in enumerate(rewards):
            answer = "B" if reward else None
            usage = {"input_tokens": 10, "output_tokens": 2 + rollout, "total_tokens": 12 + rollout}
            rows.append(
                {
                    "_ng_task_index": task,
                    "_ng_rollout_index": rollout,
                    "reward": float(reward),
                    "extracted_answer": answer,
                    "response": {"usage": usage},
                }
            )
    reply = call(srv.url, "POST", "/aggregate_metrics", json={"verify_responses": rows})
    assert reply.status == 200
    body = reply.json()
    agent = body["agent_metrics"]
    assert agent["mean/reward"] == 0.25
    assert agent["mean/output_tokens"] == 2.5
    assert agent["pass@1/accuracy"] == 25.0
    assert agent["pass@2/accuracy"] == 50.0
    assert [g["_ng_task_index"] for g in body["group_level_metrics"]] == [0, 1]
    assert body["group_level_metrics"][0]["mean/reward"] == 0.5
    assert body["key_metrics"] == {"mean/reward": 0.25, "pass@2/accuracy": 50.0}
    bad = call(srv.url, "POST", "/aggregate_metrics", json={"verify_response": []})
    assert bad.status == 422


class JudgedServer(ResourcesServer[ResourcesServerConfig]):
    async def verify(self, body: VerifyRequest) -> VerifyResponse:
        raise JudgeError("judge at http://judge returned 503")


def test_judge_failure_is_a_failure_row_not_a_reward(serve: Any) -> None:
    srv = serve(JudgedServer({"name": "judged"}))
    reply = call(srv.url, "POST", "/verify", json={"responses_create_params": PARAMS, "response": RESPONSE})
    assert reply.status == 200
    body = reply.json()
    assert body["_ng_failure_class"] == "judge_failed"
    assert body["reward"] == 0.0
    assert "JudgeError" in body["_ng_failure_judge_error"]


def test_session_store_ttl_and_lru() -> None:
    now = [0.0]
    store = SessionStore(ttl_s=10, max_sessions=2, clock=lambda: now[0])
    a = store.get_or_create("a")
    a.state["x"] = 1
    store.get_or_create("b")
    now[0] = 5
    assert store.get("a") is a  # refreshes a
    store.get_or_create("c")  # evicts b, the least recently used
    assert "b" not in store and "a" in store and len(store) == 2
    now[0] = 14
    assert store.get("a") is a  # 9 s after its last use
    now[0] = 26
    assert store.get("a") is None and store.get("c") is None  # expired
    assert store.get_or_create("a").state == {}
