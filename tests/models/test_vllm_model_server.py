"""``vllm_model`` over real HTTP, in front of the real stub upstream, driven by the OpenAI SDK."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import openai
import pytest

from rewardgym.errors import ConfigError
from rewardgym.models.upstream import sticky_index
from rewardgym.models.vllm_model import VLLMModel
from rewardgym.servers.middleware import SESSION_ID_KEY
from tests.models._upstreams import VLLM_OVERFLOW, fixed_upstream, session_id_of
from tests.stubs.client import call
from tests.stubs.openai_stub import StubState, start_stub

API_KEY = "sk-vllm-upstream-key-24680"
COOKIE = "VLLMModel___policy_model"


def make_model(base_url: str | list[str], **extra: Any) -> VLLMModel:
    config = {
        "name": "policy_model",
        "base_url": base_url,
        "api_key": API_KEY,
        "model": "served-model",
        "http": {"max_attempts": 2, "backoff_base_s": 0.01, "read_timeout_s": 5.0},
        **extra,
    }
    return VLLMModel(config)


def sdk(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused-by-our-server", max_retries=0, timeout=20)


def test_responses_are_translated_to_chat_and_back(serve: Any, stub: Any) -> None:
    runner, app = stub
    model = serve(
        make_model(
            f"{runner.url}/v1",
            extra_body={"top_k": 5, "seed": 1},
            sampling_overrides={"temperature": 0.25},
        )
    )
    result = sdk(model.url).responses.create(
        model="caller-model",
        input="Which letter?",
        instructions="Be brief.",
        max_output_tokens=50,
        temperature=0.9,
        metadata={"extra_body": json.dumps({"seed": 7})},
    )
    assert result.output_text == "\\boxed{B}"
    assert result.model == "served-model" and result.status == "completed"
    assert result.usage is not None and result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    assert result.usage.total_tokens == result.usage.input_tokens + result.usage.output_tokens
    assert result.max_output_tokens == 50  # request parameters are echoed
    [sent] = app.requests
    body = sent["json"]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["authorization"] == f"Bearer {API_KEY}"
    assert body["model"] == "served-model"
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Which letter?"}]},
    ]
    assert body["max_tokens"] == 50 and "max_output_tokens" not in body
    assert body["seed"] == 7 and body["top_k"] == 5  # extra_body: the row's metadata wins over the config
    assert body["temperature"] == 0.25  # sampling_overrides beat the caller


def test_chat_completions_pass_through(serve: Any, stub: Any) -> None:
    runner, app = stub
    model = serve(make_model(f"{runner.url}/v1", sampling_overrides={"top_p": 0.5}))
    client = sdk(model.url)
    result = client.chat.completions.create(
        model="x",
        messages=[{"role": "user", "content": "hi"}],
        max_tokens=12,
        extra_body={"ignore_eos": True},
    )
    assert result.choices[0].message.content == "\\boxed{B}"
    assert result.usage is not None and result.usage.total_tokens > 0
    body = app.requests[0]["json"]
    assert body["model"] == "served-model" and body["max_tokens"] == 12
    assert body["ignore_eos"] is True and body["top_p"] == 0.5
    assert [m.id for m in client.models.list()] == ["served-model"]


def test_streaming_replays_the_complete_response(serve: Any, stub: Any) -> None:
    runner, app = stub
    model = serve(make_model(f"{runner.url}/v1"))
    events = list(sdk(model.url).responses.create(model="x", input="hi", stream=True))
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    assert events[-1].response.output_text == "\\boxed{B}"
    assert "stream" not in app.requests[0]["json"]


def test_tool_calls_round_trip(serve: Any, stub: Any) -> None:
    runner, app = stub
    app.state.mode = "tool_then_answer"
    model = serve(make_model(f"{runner.url}/v1"))
    tool = {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    client = sdk(model.url)
    first = client.responses.create(model="x", input="Weather in SF?", tools=[tool])  # type: ignore[list-item]
    [call_item] = first.output
    assert call_item.type == "function_call" and call_item.name == "get_weather"
    assert json.loads(call_item.arguments) == {"city": "SF"}
    sent_tools = app.requests[0]["json"]["tools"]
    assert sent_tools[0]["type"] == "function" and sent_tools[0]["function"]["name"] == "get_weather"

    history: list[Any] = [
        {"role": "user", "content": "Weather in SF?"},
        call_item.model_dump(mode="json", exclude_none=True),
        {"type": "function_call_output", "call_id": call_item.call_id, "output": '{"temp": 12}'},
    ]
    second = client.responses.create(model="x", input=history, tools=[tool])  # type: ignore[list-item]
    assert second.output_text == "\\boxed{B}"
    messages = app.requests[1]["json"]["messages"]
    assert messages[1]["tool_calls"][0]["id"] == call_item.call_id
    assert messages[2] == {"role": "tool", "tool_call_id": call_item.call_id, "content": '{"temp": 12}'}


def test_replicas_are_sticky_per_session(serve: Any) -> None:
    stubs = [start_stub(StubState()) for _ in range(2)]
    try:
        model = serve(make_model([f"{runner.url}/v1" for runner, _ in stubs]))
        seen: set[int] = set()
        for _ in range(40):
            first = call(model.url, "POST", "/v1/responses", json={"input": "hi"})
            assert first.status == 200
            cookie = first.cookies[COOKIE]
            expected = sticky_index(session_id_of(cookie), 2)
            for _ in range(2):  # the session's later calls go to the same replica
                again = call(
                    model.url, "POST", "/v1/responses", json={"input": "hi"}, cookies={COOKIE: cookie}
                )
                assert again.status == 200
            counts = [len(app.requests) for _, app in stubs]
            assert counts[expected] == 3 and counts[1 - expected] == 0
            for _, app in stubs:
                app.requests.clear()
            seen.add(expected)
            if seen == {0, 1}:
                break
        assert seen == {0, 1}, "40 sessions never used both replicas"
    finally:
        for runner, app in stubs:
            app.released = True
            runner.stop()


def test_sticky_index_is_sha256_big_endian_mod_n() -> None:
    import hashlib

    sid = "5f0c8a3e-1111-4222-8333-944445555666"
    digest = int.from_bytes(hashlib.sha256(sid.encode()).digest()[:8], "big")
    assert [sticky_index(sid, n) for n in (1, 2, 3, 7)] == [0, digest % 2, digest % 3, digest % 7]
    assert SESSION_ID_KEY == "session_id"  # what session_id_of reads from the cookie


def test_a_transient_500_is_retried(serve: Any, stub: Any) -> None:
    runner, app = stub
    app.state.fail_times, app.state.fail_status = 1, 500
    model = serve(make_model(f"{runner.url}/v1"))
    reply = call(model.url, "POST", "/v1/responses", json={"input": "hi"})
    assert reply.status == 200 and len(app.requests) == 2


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("mode", "status", "kind"),
    [
        ("status", 502, "upstream_http_error"),
        ("garbage", 502, "upstream_bad_response"),
        ("wrong_shape", 502, "upstream_bad_response"),
        ("hang", 504, "upstream_timeout"),
        ("unreachable", 502, "upstream_unreachable"),
    ],
)
def test_upstream_failures_are_clear_errors(
    serve: Any, stub: Any, tmp_path: Path, mode: str, status: int, kind: str
) -> None:
    runner, app = stub
    app.state.mode, app.state.fail_status = mode, 500
    base = f"http://127.0.0.1:{free_port()}/v1" if mode == "unreachable" else f"{runner.url}/v1"
    model = serve(
        make_model(
            base,
            log_dir=str(tmp_path),
            http={
                "max_attempts": 2,
                "backoff_base_s": 0.01,
                "read_timeout_s": 0.5,
                "retry_on_timeout": False,
            },
        )
    )
    for path, body in (
        ("/v1/responses", {"input": "hi"}),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
    ):
        reply = call(model.url, "POST", path, json=body)
        assert reply.status == status, reply.body
        error = reply.json()["error"]
        assert error["type"] == kind and error["server"] == "VLLMModel___policy_model"
        assert "/v1/chat/completions" in error["message"]  # names the upstream URL
        assert API_KEY not in reply.body.decode()
    if mode == "status":
        assert len(app.requests) == 4  # 500 is retried (2 attempts per call), then reported
    assert API_KEY not in (tmp_path / "policy_model.log").read_text()


@pytest.mark.parametrize("refusal", [401, 403])
def test_refused_credentials_are_a_distinct_unretried_error(serve: Any, stub: Any, refusal: int) -> None:
    """A refused key is answered 500 ``upstream_auth_error`` (not a retryable 502): callers stop."""
    runner, app = stub
    app.state.mode, app.state.fail_status = "status", refusal
    model = serve(make_model(f"{runner.url}/v1", http={"max_attempts": 3, "backoff_base_s": 0.01}))
    reply = call(model.url, "POST", "/v1/responses", json={"input": "hi"})
    assert reply.status == 500, reply.body
    error = reply.json()["error"]
    assert error["type"] == "upstream_auth_error" and f"HTTP {refusal}" in error["message"]
    assert API_KEY not in reply.body.decode()
    assert len(app.requests) == 1


def test_context_overflow_is_an_incomplete_empty_response(serve: Any) -> None:
    with fixed_upstream(400, VLLM_OVERFLOW) as (base, app):
        model = serve(make_model(base))
        reply = call(model.url, "POST", "/v1/responses", json={"input": "long " * 10, "max_output_tokens": 9})
        assert reply.status == 200
        response = reply.json()
        assert response["status"] == "incomplete"
        assert response["incomplete_details"] == {"reason": "max_output_tokens"}
        [item] = response["output"]
        assert item["type"] == "message" and item["content"][0]["text"] == ""

        chat = call(
            model.url, "POST", "/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]}
        )
        assert chat.status == 200
        assert chat.json()["choices"][0]["finish_reason"] == "length"
        assert len(app.requests) == 2  # a 400 is final: never retried


def test_other_upstream_400_is_reported_not_swallowed(serve: Any) -> None:
    body = b'{"error": {"message": "temperature must be non-negative"}}'
    with fixed_upstream(400, body) as (base, app):
        model = serve(make_model(base))
        reply = call(model.url, "POST", "/v1/responses", json={"input": "hi"})
        # The upstream rejected the request itself: 400 upstream_rejected, so no caller retries it.
        assert (reply.status, reply.json()["error"]["type"]) == (400, "upstream_rejected")
        assert "HTTP 400" in reply.json()["error"]["message"]
        assert "temperature must be non-negative" in reply.json()["error"]["message"]
        assert len(app.requests) == 1


def test_untranslatable_request_is_400_and_never_sent(serve: Any, stub: Any) -> None:
    runner, app = stub
    model = serve(make_model(f"{runner.url}/v1"))
    reply = call(model.url, "POST", "/v1/responses", json={"input": "hi", "tool_choice": "required"})
    assert reply.status == 400 and "tool_choice" in reply.json()["error"]["message"]
    bad_meta = {"input": "hi", "metadata": {"extra_body": "{not json"}}
    reply = call(model.url, "POST", "/v1/responses", json=bad_meta)
    assert reply.status == 400 and "metadata.extra_body" in reply.json()["error"]["message"]
    assert not app.requests


def test_blocked_sequential_reasoning_is_answered_locally(serve: Any, stub: Any) -> None:
    runner, app = stub
    model = serve(make_model(f"{runner.url}/v1", sequential_reasoning_allowed=False))
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}]
    reply = call(model.url, "POST", "/v1/responses", json={"input": history})
    assert reply.status == 200
    assert reply.json()["incomplete_details"] == {"reason": "content_filter"}
    assert not app.requests


def test_responses_native_upstream(serve: Any, stub: Any) -> None:
    runner, app = stub
    model = serve(make_model(f"{runner.url}/v1", is_responses_native=True, extra_body={"seed": 3}))
    result = sdk(model.url).responses.create(model="x", input="hi", temperature=0.1)
    assert result.output_text == "\\boxed{B}"
    [sent] = app.requests
    assert sent["path"] == "/v1/responses"
    assert sent["json"]["model"] == "served-model" and sent["json"]["seed"] == 3
    assert sent["json"]["input"] == "hi" and sent["json"]["temperature"] == 0.1


def test_config_is_the_server_base_plus_the_model_fields() -> None:
    model = make_model("http://127.0.0.1:9/v1/", port=0, log_level="DEBUG", max_concurrent_requests=2)
    assert model.config.base_urls() == ["http://127.0.0.1:9/v1"]
    assert model.config.http.max_attempts == 2 and model.config.log_level == "DEBUG"
    assert API_KEY not in repr(model.config)
    with pytest.raises(ConfigError, match=r"policy_model\.tempreature: unknown field"):
        make_model("http://127.0.0.1:9/v1", tempreature=0.1)
    with pytest.raises(ConfigError, match=r"policy_model\.base_url"):
        VLLMModel({"name": "policy_model", "model": "m"})
    with pytest.raises(ConfigError, match="is_responses_native"):
        make_model("http://127.0.0.1:9/v1", is_responses_native=True, replace_developer_role_with_system=True)
