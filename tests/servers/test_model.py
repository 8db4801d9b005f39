"""Model servers over real HTTP: `rewardgym.models.openai_model` before the stub upstream, via the SDK."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import openai
import pytest

from rewardgym.models.openai_model import OpenAIModel
from tests.stubs.client import call

API_KEY = "sk-upstream-key-0123456789"


def make_model(stub_url: str, **extra: Any) -> OpenAIModel:
    config = {
        "name": "policy_model",
        "openai_base_url": f"{stub_url}/v1",
        "openai_api_key": API_KEY,
        "openai_model": "upstream-model",
        "http": {"max_attempts": 2, "backoff_base_s": 0.01, "read_timeout_s": 2.0},
        **extra,
    }
    return OpenAIModel(config)


def sdk(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused-by-our-server", max_retries=0, timeout=10)


def test_responses_via_the_sdk(serve: Any, stub: Any) -> None:
    runner, app = stub
    model = serve(make_model(runner.url, extra_body={"temperature": 0.5, "top_p": 0.9}))
    client = sdk(model.url)
    result = client.responses.create(model="anything", input="Which letter?", top_p=0.1)
    assert result.output_text == "\\boxed{B}"
    assert result.usage is not None and result.usage.total_tokens > 0
    [sent] = app.requests
    assert sent["path"] == "/v1/responses"
    assert sent["json"]["model"] == "upstream-model"  # replaced
    assert sent["json"]["temperature"] == 0.5  # extra_body under the request
    assert sent["json"]["top_p"] == 0.1  # the request wins
    assert sent["headers"]["authorization"] == f"Bearer {API_KEY}"


def test_chat_completions_via_the_sdk(serve: Any, stub: Any) -> None:
    runner, app = stub
    model = serve(make_model(runner.url))
    client = sdk(model.url)
    result = client.chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}])
    assert result.choices[0].message.content == "\\boxed{B}"
    assert app.requests[0]["path"] == "/v1/chat/completions"
    assert [m.id for m in client.models.list()] == ["upstream-model"]


def test_streaming_replays(serve: Any, stub: Any) -> None:
    runner, app = stub
    model = serve(make_model(runner.url))
    client = sdk(model.url)
    events = list(client.responses.create(model="x", input="hi", stream=True))
    types = [e.type for e in events]
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert "response.output_text.delta" in types
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert cast(Any, events[-1]).response.output_text == "\\boxed{B}"
    assert "stream" not in app.requests[0]["json"]  # upstream called without streaming

    chunks = list(
        client.chat.completions.create(
            model="x",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "\\boxed{B}"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_tool_call_shapes_pass_through(serve: Any, stub: Any) -> None:
    runner, app = stub
    app.state.mode = "tool_then_answer"
    model = serve(make_model(runner.url))
    reply = call(model.url, "POST", "/v1/responses", json={"input": "weather?"})
    [item] = reply.json()["output"]
    assert item["type"] == "function_call" and item["name"] == "get_weather"


def test_invalid_requests_are_422(serve: Any, stub: Any) -> None:
    runner, app = stub
    model = serve(make_model(runner.url))
    reply = call(model.url, "POST", "/v1/responses", json={"input": "hi", "temprature": 1})
    assert reply.status == 422
    assert ["body", "temprature"] in [d["loc"] for d in reply.json()["detail"]]
    reply = call(model.url, "POST", "/v1/chat/completions", json={"model": "x"})
    assert reply.status == 422
    assert not app.requests  # nothing reached the upstream


@pytest.mark.parametrize(
    ("mode", "status", "kind"),
    [
        ("garbage", 502, "upstream_bad_response"),
        ("wrong_shape", 502, "upstream_bad_response"),
        ("status", 502, "upstream_http_error"),
    ],
)
def test_upstream_garbage_is_never_passed_on(
    serve: Any, stub: Any, tmp_path: Path, mode: str, status: int, kind: str
) -> None:
    runner, app = stub
    app.state.mode, app.state.fail_status = mode, 500
    model = serve(make_model(runner.url, log_dir=str(tmp_path)))
    reply = call(model.url, "POST", "/v1/responses", json={"input": "hi"})
    assert reply.status == status
    error = reply.json()["error"]
    assert error["type"] == kind and error["server"] == "OpenAIModel___policy_model"
    assert "/v1/responses" in error["message"]
    assert API_KEY not in reply.body.decode()
    assert API_KEY not in (tmp_path / "policy_model.log").read_text()


def test_missing_base_url_is_a_config_error() -> None:
    from rewardgym.errors import ConfigError

    with pytest.raises(ConfigError, match=r"policy_model\.openai_base_url"):
        OpenAIModel({"name": "policy_model", "openai_model": "m"})
