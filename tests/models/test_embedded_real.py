"""The adapter against the REAL llama.cpp server serving SmolLM2-135M (temperature 0, short generations)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rewardgym.models.chat_adapter import (
    build_chat_request,
    build_response,
    context_overflow_response,
    is_context_overflow,
)
from rewardgym.models.config import EmbeddedModelConfig
from rewardgym.models.embedded import EmbeddedLlama
from rewardgym.protocol import FunctionCall, ResponseCreateParams, function_calls, output_text
from tests.models._http import http_json

pytestmark = pytest.mark.model

CONFIG = EmbeddedModelConfig()
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "",
    "strict": True,
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": ""}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


def _respond(llama: EmbeddedLlama, params: dict[str, Any]) -> Any:
    request = ResponseCreateParams.model_validate(params)
    status, reply = http_json(llama.base_url + "/chat/completions", build_chat_request(request, CONFIG))
    assert status == 200, reply
    return build_response(reply, request, CONFIG)


def test_server_is_local_and_lists_the_model(llama: EmbeddedLlama) -> None:
    assert llama.base_url.startswith("http://127.0.0.1:") and llama.base_url.endswith("/v1")
    status, models = http_json(llama.base_url + "/models")
    assert status == 200 and models["data"]


def test_short_generation_maps_tokens_usage_and_length_into_a_response(llama: EmbeddedLlama) -> None:
    params = {"input": "Say hello.", "max_output_tokens": 8, "temperature": 0}
    response = _respond(llama, params)
    assert response.model == "SmolLM2-135M-Instruct"
    assert [item.type for item in response.output] == ["message"]
    assert output_text(response).strip()
    usage = response.usage
    assert usage is not None
    assert usage.output_tokens == 8 and usage.input_tokens > 5
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.input_tokens_details is not None and usage.input_tokens_details.cached_tokens is not None
    assert response.status == "incomplete"
    assert (
        response.incomplete_details is not None and response.incomplete_details.reason == "max_output_tokens"
    )
    assert output_text(_respond(llama, params)) == output_text(response)  # temperature 0 is deterministic


def test_per_row_seed_in_metadata_extra_body_reaches_the_model(llama: EmbeddedLlama) -> None:
    def sample(seed: int) -> str:
        metadata = {"extra_body": json.dumps({"seed": seed})}
        params = {
            "input": "Tell me a story.",
            "max_output_tokens": 8,
            "temperature": 1.5,
            "metadata": metadata,
        }
        return output_text(_respond(llama, params))

    first = sample(1234)
    assert sample(1234) == first  # same seed, same sample
    assert len({first, sample(1), sample(2), sample(3)}) > 1  # other seeds sample differently


def test_tool_call_via_json_schema_yields_a_get_weather_function_call(llama: EmbeddedLlama) -> None:
    conversation: list[dict[str, Any]] = [
        {"role": "developer", "content": "You are a helpful personal assistant."},
        {"role": "user", "content": "What is the weather in Paris?"},
    ]
    params = {
        "input": conversation,
        "tools": [WEATHER],
        "temperature": 0,
        "max_output_tokens": 60,
    }
    response = _respond(llama, params)
    (call,) = function_calls(response)
    assert isinstance(call, FunctionCall)
    assert call.name == "get_weather" and call.call_id.startswith("call_")
    assert json.loads(call.arguments) == {"city": "Paris"}
    assert response.status == "completed"

    # The next turn — history with the call, its output and a past reasoning item — is accepted upstream
    # and again gives a well-formed reply (a call or a message; a 135M model tends to call again).
    history = [
        *conversation,
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "I should look it up."}]},
        *[item.model_dump(mode="json", exclude_unset=True) for item in response.output],
        {"type": "function_call_output", "call_id": call.call_id, "output": '{"weather": "cold"}'},
    ]
    follow_up = _respond(llama, {**params, "input": history, "max_output_tokens": 30})
    assert follow_up.output and all(item.type in ("message", "function_call") for item in follow_up.output)


def test_context_overflow_400_is_detected_and_becomes_an_incomplete_response(llama: EmbeddedLlama) -> None:
    request = ResponseCreateParams.model_validate({"input": "hello " * 1500, "max_output_tokens": 8})
    status, body = http_json(llama.base_url + "/chat/completions", build_chat_request(request, CONFIG))
    assert status == 400
    assert is_context_overflow(status, body), body
    response = context_overflow_response(request, CONFIG)
    assert response.status == "incomplete" and output_text(response) == ""
