"""simple_agent over real HTTP: real resources servers, the stub upstream as model
(docs/reference/environments.md §1.4)."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from rewardgym.agents.simple_agent import SimpleAgent
from rewardgym.agents.usage import accumulate_usage
from rewardgym.collect.failures import FailureClass, classify_status
from rewardgym.protocol import VerifyResponse
from tests.stubs.client import call
from tests.stubs.environments import CounterServer, ExactMatchServer, ExactMatchVerifyRequest, WeatherServer

PARAMS = {"input": [{"role": "user", "content": "Which letter?"}]}


def usage(i: int, o: int, t: int) -> dict[str, Any]:
    return {
        "input_tokens": i,
        "output_tokens": o,
        "total_tokens": t,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }


REASONING = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "hmm"}]}


def message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_call(name: str, arguments: str, call_id: str = "call_1") -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


class Recording(ExactMatchServer):
    """The exact-match environment, remembering which endpoints were called."""

    seen: list[str]

    async def seed_session(self, body: Any) -> None:
        self.seen.append("seed_session")

    async def verify(self, body: ExactMatchVerifyRequest) -> VerifyResponse:
        self.seen.append("verify")
        return await super().verify(body)


def agent_for(serve: Any, rs_url: str, model_url: str, **extra: Any) -> Any:
    config = {
        "name": "agent",
        "resources_server": {"type": "resources_servers", "name": "env"},
        "model_server": {"type": "responses_api_models", "name": "policy_model"},
        "peers": {"env": rs_url, "policy_model": model_url},
        "http": {"max_attempts": 2, "backoff_base_s": 0.01},
        **extra,
    }
    return serve(SimpleAgent(config))


@pytest.fixture
def world(serve: Any, stub: Any) -> dict[str, Any]:
    runner, app = stub
    env = Recording({"name": "env"})
    env.seen = []
    rs = serve(env)
    return {"stub": app, "stub_url": runner.url, "env": env, "rs": rs, "serve": serve}


def test_run_returns_the_verify_response(world: dict[str, Any]) -> None:
    agent = agent_for(world["serve"], world["rs"].url, world["stub_url"])
    row = {"responses_create_params": PARAMS, "expected_answer": "B", "uuid": "u1", "_ng_task_index": 3}
    reply = call(agent.url, "POST", "/run", json=row)
    assert reply.status == 200
    body = reply.json()
    assert body["reward"] == 1.0 and body["extracted_answer"] == "B" and body["expected_answer"] == "B"
    assert body["response"]["usage"]["total_tokens"] > 0
    assert "uuid" not in body  # the verify response declares its fields
    assert world["env"].seen == ["seed_session", "verify"]
    # NeMo Gym 0.7.0's outcome keys, after the verify reply's own
    assert list(body)[-3:] == ["mask_sample", "failure_kind", "failure_reason"]
    assert (body["mask_sample"], body["failure_kind"], body["failure_reason"]) == (False, None, None)


def test_usage_is_summed_and_max_steps_stops(world: dict[str, Any]) -> None:
    app = world["stub"]
    app.state.mode = "script"
    app.state.script = [
        {"output": [REASONING], "usage": usage(1, 2, 3)},
        {"output": [REASONING], "usage": None},
        {"output": [REASONING], "usage": usage(100, 200, 300)},
        {"output": [message("never reached")]},
    ]
    agent = agent_for(world["serve"], world["rs"].url, world["stub_url"], max_steps=3)
    reply = call(agent.url, "POST", "/v1/responses", json=PARAMS)
    body = reply.json()
    assert body["usage"] == {
        "input_tokens": 101,
        "output_tokens": 202,
        "total_tokens": 303,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    assert len(app.requests) == 3
    assert [item["type"] for item in body["output"]] == ["reasoning"] * 3


def test_reasoning_only_output_continues(world: dict[str, Any]) -> None:
    app = world["stub"]
    app.state.mode = "script"
    app.state.script = [{"output": [REASONING]}, {"output": [message("\\boxed{B}")]}]
    agent = agent_for(world["serve"], world["rs"].url, world["stub_url"])
    body = call(agent.url, "POST", "/v1/responses", json=PARAMS).json()
    assert len(app.requests) == 2
    second_input = app.requests[1]["json"]["input"]
    assert second_input == [*PARAMS["input"], REASONING]  # original input + outputs so far
    assert [i["type"] for i in body["output"]] == ["reasoning", "message"]


def test_invalid_tool_arguments_never_reach_the_server(world: dict[str, Any]) -> None:
    app = world["stub"]
    weather = world["serve"](WeatherServer({"name": "weather"}))
    app.state.mode = "script"
    app.state.script = [
        {"output": [function_call("get_weather", "{not json")]},
        {"output": [message("done")]},
    ]
    agent = agent_for(world["serve"], weather.url, world["stub_url"])
    body = call(agent.url, "POST", "/v1/responses", json=PARAMS).json()
    output = body["output"][1]
    assert output["type"] == "function_call_output" and output["call_id"] == "call_1"
    assert "Invalid tool call arguments" in output["output"] and "JSONDecodeError" in output["output"]
    assert len(app.requests) == 2  # the loop went on


def test_tool_outputs_are_raw_bodies_even_on_errors(world: dict[str, Any]) -> None:
    app = world["stub"]
    weather = world["serve"](WeatherServer({"name": "weather"}))
    app.state.mode = "script"
    app.state.script = [
        {
            "output": [
                function_call("get_weather", '{"city": "SF"}', "c1"),
                function_call("get_weather", '{"town": "SF"}', "c2"),
                function_call("no_such_tool", "{}", "c3"),
            ]
        },
        {"output": [message("done")]},
    ]
    agent = agent_for(world["serve"], weather.url, world["stub_url"])
    body = call(agent.url, "POST", "/v1/responses", json=PARAMS).json()
    outputs = [i for i in body["output"] if i["type"] == "function_call_output"]
    assert [o["call_id"] for o in outputs] == ["c1", "c2", "c3"]
    assert outputs[0]["output"] == '{"city":"SF","weather_description":"The weather in SF is cold."}'
    assert '"loc":["body","city"]' in outputs[1]["output"]
    assert '"detail":"Not Found"' in outputs[2]["output"]
    assert [i["type"] for i in body["output"]][:3] == ["function_call"] * 3  # model items first, then outputs


@pytest.mark.parametrize("reason", ["max_output_tokens", "content_filter"])
def test_incomplete_details_stop_the_loop(world: dict[str, Any], reason: str) -> None:
    app = world["stub"]
    app.state.mode = "script"
    app.state.script = [
        {"output": [function_call("get_weather", "{}")], "incomplete_details": {"reason": reason}},
        {"output": [message("never")]},
    ]
    agent = agent_for(world["serve"], world["rs"].url, world["stub_url"])
    body = call(agent.url, "POST", "/v1/responses", json=PARAMS).json()
    assert len(app.requests) == 1
    assert body["incomplete_details"] == {"reason": reason}


def test_skip_verification(world: dict[str, Any]) -> None:
    agent = agent_for(
        world["serve"],
        world["rs"].url,
        world["stub_url"],
        skip_verification=True,
        skip_verification_reward=0.25,
    )
    row = {"responses_create_params": PARAMS, "expected_answer": "B"}
    body = call(agent.url, "POST", "/run", json=row).json()
    assert body["reward"] == 0.25 and body["verification_skipped"] is True
    assert (body["mask_sample"], body["failure_kind"], body["failure_reason"]) == (False, None, None)
    assert body["expected_answer"] == "B"  # the row is kept
    assert world["env"].seen == ["seed_session"]
    assert len(world["stub"].requests) == 1
    metrics = call(agent.url, "POST", "/aggregate_metrics", json={"verify_responses": []}).json()
    assert metrics == {"group_level_metrics": [], "agent_metrics": {}, "key_metrics": {}}


def test_cookies_thread_seed_tools_and_verify(serve: Any, stub: Any) -> None:
    runner, app = stub
    counter = serve(CounterServer({"name": "counter"}))
    app.state.mode = "script"
    app.state.script = [
        {
            "output": [
                function_call("increment_counter", '{"count": 1}', "a"),
                function_call("increment_counter", '{"count": 2}', "b"),
            ]
        },
        {"output": [function_call("get_counter_value", "{}", "c")]},
        {"output": [message("6")]},
    ]
    agent = agent_for(serve, counter.url, runner.url)
    row = {"responses_create_params": PARAMS, "initial_count": 3, "expected_count": 6}
    body = call(agent.url, "POST", "/run", json=row).json()
    assert body["reward"] == 1.0
    outputs = [i["output"] for i in body["response"]["output"] if i["type"] == "function_call_output"]
    assert outputs == ['{"success":true}', '{"success":true}', '{"count":6}']


def test_aggregate_metrics_are_proxied(world: dict[str, Any]) -> None:
    agent = agent_for(world["serve"], world["rs"].url, world["stub_url"])
    rows = [
        {"_ng_task_index": 0, "_ng_rollout_index": i, "reward": float(i), "extracted_answer": "B"}
        for i in range(2)
    ]
    rows += [
        {"_ng_task_index": 1, "_ng_rollout_index": i, "reward": 1.0, "extracted_answer": "B"}
        for i in range(2)
    ]
    body = call(agent.url, "POST", "/aggregate_metrics", json={"verify_responses": rows}).json()
    assert body["agent_metrics"]["mean/reward"] == 3 / 4
    assert body["agent_metrics"]["pass@2/accuracy"] == 100.0
    # rollout 0 of the tasks: 0 and 1 → 50 %; rollout 1: 1 and 1 → 100 %; the most repeats: 2
    assert body["agent_metrics"]["per_sample_aggregate"] == {"accuracy": [50.0, 100.0]}
    assert list(body["agent_metrics"])[-1] == "num_repeats" and body["agent_metrics"]["num_repeats"] == 2


def test_bad_rows_and_bad_upstreams(world: dict[str, Any]) -> None:
    app = world["stub"]
    agent = agent_for(world["serve"], world["rs"].url, world["stub_url"])
    missing = call(agent.url, "POST", "/run", json={"expected_answer": "B"})
    assert missing.status == 422
    assert missing.json()["detail"][0]["loc"] == ["body", "responses_create_params"]
    bad = call(agent.url, "POST", "/run", json={"responses_create_params": {"input": "x", "tempreture": 1}})
    assert bad.status == 422
    assert ["body", "responses_create_params", "tempreture"] in [d["loc"] for d in bad.json()["detail"]]
    assert call(agent.url, "POST", "/run", data=b"[1, 2]").status == 422
    assert world["env"].seen == []  # nothing was sent on

    app.state.mode = "wrong_shape"
    reply = call(agent.url, "POST", "/run", json={"responses_create_params": PARAMS, "expected_answer": "B"})
    assert reply.status == 502
    assert reply.json()["error"]["type"] == "upstream_bad_response"
    assert "verify" not in world["env"].seen  # no reward is made up


def test_openai_sdk_drives_the_agent_loop(world: dict[str, Any]) -> None:
    agent = agent_for(world["serve"], world["rs"].url, world["stub_url"])
    client = openai.OpenAI(base_url=f"{agent.url}/v1", api_key="unused", max_retries=0)
    result = client.responses.create(model="policy", input="Which letter?")
    assert result.output_text == "\\boxed{B}"


def test_unknown_peer_is_a_config_error() -> None:
    from rewardgym.errors import ConfigError

    config = {
        "name": "agent",
        "resources_server": {"type": "resources_servers", "name": "mcqa"},
        "model_server": {"type": "responses_api_models", "name": "policy_model"},
        "peers": {"policy_model": "http://127.0.0.1:1"},
    }
    with pytest.raises(ConfigError, match=r"agent\.resources_server: no server instance named 'mcqa'"):
        SimpleAgent(config)
    with pytest.raises(ConfigError, match=r"agent\.model_server"):
        SimpleAgent({**config, "model_server": {"type": "resources_servers", "name": "policy_model"}})


def test_usage_accumulation_rules() -> None:
    assert accumulate_usage(None, None) is None
    assert accumulate_usage(None, usage(1, 2, 3)) == usage(1, 2, 3)
    unknown = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, "input_tokens_details": None}
    total = accumulate_usage(usage(1, 2, 3), unknown)
    assert total is not None and total["input_tokens_details"] is None  # unknown stays unknown
    assert total["output_tokens_details"] is None and total["total_tokens"] == 5


def test_first_usage_is_an_independent_copy() -> None:
    first = {**usage(1, 2, 3), "extra": [{"k": 1}]}
    copied = accumulate_usage(None, first)
    assert copied == first
    assert copied is not None and copied is not first
    copied["input_tokens_details"]["cached_tokens"] = 99
    copied["extra"][0]["k"] = 2
    assert first["input_tokens_details"]["cached_tokens"] != 99 and first["extra"] == [{"k": 1}]


class BrokenVerifier(ExactMatchServer):
    """The exact-match environment whose ``/verify`` crashes (HTTP 500)."""

    async def verify(self, body: ExactMatchVerifyRequest) -> VerifyResponse:
        raise RuntimeError("the grader fell over")


def test_a_failed_verify_is_said_by_its_error_type(serve: Any, stub: Any) -> None:
    """The collector classifies the agent's answer by ``error.type``, not by words in its message."""
    runner, _ = stub
    rs = serve(BrokenVerifier({"name": "env"}))
    agent = agent_for(serve, rs.url, runner.url)
    reply = call(agent.url, "POST", "/run", json={"responses_create_params": PARAMS, "expected_answer": "B"})
    assert reply.status == 502
    assert reply.json()["error"]["type"] == "verifier_error"
    assert classify_status(reply.status, reply.body.decode()) is FailureClass.VERIFIER_ERROR


def test_outcome_keys_the_environment_gives_are_kept() -> None:
    from rewardgym.agents._run_metrics import with_run_outcome

    body = b'{"reward": 0.0, "mask_sample": true, "failure_reason": "judge said no"}\n'
    out = with_run_outcome(body, {"reward": 0.0, "mask_sample": True, "failure_reason": "judge said no"})
    assert (
        out == b'{"reward": 0.0, "mask_sample": true, "failure_reason": "judge said no","failure_kind":null}'
    )
