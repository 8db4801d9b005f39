"""``embedded_model`` over real HTTP with the REAL model (llama.cpp child + SmolLM2-135M), via the OpenAI SDK.

Short generations only (≤ 60 tokens). One server per module for the read-only tests; the lifecycle tests
(child death, shutdown) start their own.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import psutil
import pytest

from rewardgym.errors import ConfigError
from rewardgym.launch.serve import ThreadedServer
from rewardgym.models.embedded_model import EmbeddedModel
from tests.stubs.client import call

pytestmark = pytest.mark.model

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather of a city.",
    "strict": True,
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


def embedded(log_dir: Path, **extra: Any) -> EmbeddedModel:
    config = {"name": "policy_model", "parallel": 2, "ctx_size": 2048, "log_dir": str(log_dir), **extra}
    return EmbeddedModel(config)


@pytest.fixture(scope="module")
def model(model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> EmbeddedModel:
    return embedded(tmp_path_factory.mktemp("embedded"))


@pytest.fixture(scope="module")
def server(model: EmbeddedModel) -> Iterator[ThreadedServer]:
    with ThreadedServer(model, name="embedded") as runner:
        yield runner


def sdk(runner: ThreadedServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{runner.url}/v1", api_key="none", max_retries=0, timeout=120)


def test_responses_tokens_usage_and_finish_reason(server: ThreadedServer) -> None:
    client = sdk(server)
    result = client.responses.create(model="x", input="Say hello.", max_output_tokens=8, temperature=0)
    assert result.model == "SmolLM2-135M-Instruct"
    assert result.output_text.strip()
    assert result.status == "incomplete"  # stopped by max_output_tokens
    assert result.incomplete_details is not None and result.incomplete_details.reason == "max_output_tokens"
    usage = result.usage
    assert usage is not None and usage.output_tokens == 8 and usage.input_tokens > 5
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    again = client.responses.create(model="x", input="Say hello.", max_output_tokens=8, temperature=0)
    assert again.output_text == result.output_text  # temperature 0 is deterministic

    done = client.responses.create(
        model="x", input="What is 2 + 2? Answer with one number.", max_output_tokens=60, temperature=0
    )
    assert done.status == "completed" and done.usage is not None and 0 < done.usage.output_tokens < 60


def test_chat_completions_pass_through(server: ThreadedServer) -> None:
    client = sdk(server)
    result = client.chat.completions.create(
        model="x", messages=[{"role": "user", "content": "Say hello."}], max_tokens=6, temperature=0
    )
    choice = result.choices[0]
    assert choice.finish_reason == "length" and (choice.message.content or "").strip()
    assert result.usage is not None and result.usage.completion_tokens == 6 and result.usage.prompt_tokens > 5
    assert [m.id for m in client.models.list()] == ["SmolLM2-135M-Instruct"]


def test_tool_call_via_json_schema(server: ThreadedServer) -> None:
    result = sdk(server).responses.create(
        model="x",
        input=[{"role": "user", "content": "What is the weather in Paris?"}],
        tools=[WEATHER],  # type: ignore[list-item]
        temperature=0,
        max_output_tokens=60,
    )
    calls = [item for item in result.output if item.type == "function_call"]
    assert len(calls) == 1, result.output
    assert calls[0].name == "get_weather" and calls[0].call_id.startswith("call_")
    assert json.loads(calls[0].arguments) == {"city": "Paris"}


def test_seed_from_row_metadata_reaches_llama(server: ThreadedServer) -> None:
    client = sdk(server)

    def sample(seed: int) -> str:
        result = client.responses.create(
            model="x",
            input="Tell me a story.",
            max_output_tokens=8,
            temperature=1.5,
            metadata={"extra_body": json.dumps({"seed": seed})},
        )
        return result.output_text

    first = sample(1234)
    assert sample(1234) == first  # same seed, same sample
    assert len({first, sample(1), sample(2), sample(3)}) > 1  # other seeds sample differently


def test_context_overflow_is_an_incomplete_empty_response(server: ThreadedServer) -> None:
    reply = call(server.url, "POST", "/v1/responses", json={"input": "hello " * 1500, "max_output_tokens": 8})
    assert reply.status == 200, reply.body
    response = reply.json()
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert [item["content"][0]["text"] for item in response["output"]] == [""]


def test_llama_log_is_in_the_server_log_dir(server: ThreadedServer, model: EmbeddedModel) -> None:
    assert model.llama is not None and model.config.log_dir is not None
    assert model.llama.log_path == model.config.log_dir / "policy_model.llama.log"
    assert model.llama.log_path.stat().st_size > 0
    assert model.llama.base_url.startswith("http://127.0.0.1:")


def wait_until(condition: Any, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_dead_llama_answers_503_and_shutdown_stops_the_child(model_path: Path, tmp_path: Path) -> None:
    model = embedded(tmp_path)
    with ThreadedServer(model, name="embedded-dying") as runner:
        assert model.llama is not None and model.llama.pid is not None
        pid = model.llama.pid
        assert (
            call(runner.url, "POST", "/v1/responses", json={"input": "hi", "max_output_tokens": 2}).status
            == 200
        )
        os.kill(pid, signal.SIGKILL)
        log = tmp_path / "policy_model.log"
        assert wait_until(lambda: "exited with code -9" in log.read_text()), log.read_text()
        for path, body in (
            ("/v1/responses", {"input": "hi"}),
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
        ):
            reply = call(runner.url, "POST", path, json=body)
            assert reply.status == 503
            error = reply.json()["error"]
            assert error["type"] == "model_unavailable"
            assert f"pid {pid}) exited with code -9" in error["message"]
        assert call(runner.url, "GET", "/").status == 200  # an in-process server keeps running

    second = embedded(tmp_path)
    with ThreadedServer(second, name="embedded-stopping"):
        assert second.llama is not None and second.llama.pid is not None
        child = psutil.Process(second.llama.pid)
        assert child.is_running()
    assert wait_until(lambda: not psutil.pid_exists(child.pid) or child.status() == psutil.STATUS_ZOMBIE)


def test_missing_model_path_fails_start_up_naming_the_field(tmp_path: Path) -> None:
    model = embedded(tmp_path, model_path=str(tmp_path / "nope.gguf"))
    with pytest.raises(Exception, match="did not start"):
        ThreadedServer(model, name="embedded-missing").start()
    log = (tmp_path / "policy_model.log").read_text()
    assert "policy_model.model_path: GGUF file not found" in log
    with pytest.raises(ConfigError, match=r"policy_model\.parallel"):
        embedded(tmp_path, parallel=0)
