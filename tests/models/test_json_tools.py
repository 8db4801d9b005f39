"""Tool calls emulated with a JSON-schema constrained reply (for upstreams without tool support)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from rewardgym.models.chat_adapter import build_chat_request, build_response
from rewardgym.models.config import ChatAdapterConfig
from rewardgym.models.errors import UnsupportedRequestError
from rewardgym.models.json_tools import decode_tool_reply
from rewardgym.protocol import FunctionCall, ResponseCreateParams, function_calls, output_text

CONFIG = ChatAdapterConfig(model="smol", tool_calls_via_json_schema=True)
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather in a city.",
    "strict": True,
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}
TIME = {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}


def _params(**fields: Any) -> ResponseCreateParams:
    return ResponseCreateParams.model_validate({"input": "What is the weather in Paris?", **fields})


def _reply(content: str | None, finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "x",
        "created": 1,
        "model": "smol",
        "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
    }


def test_request_replaces_tools_by_a_json_schema_and_an_instruction() -> None:
    body = build_chat_request(_params(tools=[WEATHER, TIME], parallel_tool_calls=True), CONFIG)
    assert "tools" not in body and "tool_choice" not in body and "parallel_tool_calls" not in body
    assert body["response_format"]["type"] == "json_schema"
    schema = body["response_format"]["json_schema"]["schema"]
    branches = schema["anyOf"]
    assert [b["properties"]["type"]["const"] for b in branches] == ["tool_call", "tool_call", "answer"]
    assert [b["properties"].get("name", {}).get("const") for b in branches] == [
        "get_weather",
        "get_time",
        None,
    ]
    assert branches[0]["properties"]["arguments"] == WEATHER["parameters"]
    system = body["messages"][0]
    assert system["role"] == "system"
    assert "get_weather: Get the current weather in a city." in system["content"]
    assert '"city": string' in system["content"]
    assert body["messages"][1]["role"] == "user"


def test_instruction_is_appended_to_an_existing_leading_system_message() -> None:
    params = _params(
        input=[{"role": "system", "content": "Be nice."}, {"role": "user", "content": "q"}], tools=[WEATHER]
    )
    messages = build_chat_request(params, CONFIG)["messages"]
    assert messages[0]["content"].startswith("Be nice.\n\nAvailable functions:")
    assert [m["role"] for m in messages] == ["system", "user"]


def test_required_and_named_tool_choice_remove_the_answer_branch() -> None:
    required = build_chat_request(_params(tools=[WEATHER, TIME], tool_choice="required"), CONFIG)
    branches = required["response_format"]["json_schema"]["schema"]["anyOf"]
    assert [b["properties"]["type"]["const"] for b in branches] == ["tool_call", "tool_call"]
    named = build_chat_request(
        _params(tools=[WEATHER, TIME], tool_choice={"type": "function", "name": "get_time"}), CONFIG
    )
    assert named["response_format"]["json_schema"]["schema"]["properties"]["name"] == {"const": "get_time"}
    with pytest.raises(UnsupportedRequestError, match="nope"):
        build_chat_request(_params(tools=[WEATHER], tool_choice={"type": "function", "name": "nope"}), CONFIG)


def test_tool_choice_none_drops_tools_and_asks_for_plain_text() -> None:
    body = build_chat_request(_params(tools=[WEATHER], tool_choice="none"), CONFIG)
    assert "response_format" not in body and "tools" not in body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What is the weather in Paris?"}]}
    ]
    call_json = '{"type": "tool_call", "name": "get_weather", "arguments": {}}'
    response = build_response(_reply(call_json), _params(tools=[WEATHER], tool_choice="none"), CONFIG)
    assert function_calls(response) == []  # not decoded: the model was not asked for JSON


def test_history_calls_are_rewritten_as_the_json_the_model_produced() -> None:
    params = _params(
        input=[
            {"role": "user", "content": "Weather in Paris?"},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "get_weather",
                "arguments": '{"city": "Paris"}',
            },
            {"type": "function_call_output", "call_id": "c1", "output": '{"weather": "cold"}'},
        ],
        tools=[WEATHER],
    )
    messages = build_chat_request(params, CONFIG)["messages"]
    assistant = messages[2]
    assert "tool_calls" not in assistant
    assert json.loads(assistant["content"]) == {
        "type": "tool_call",
        "name": "get_weather",
        "arguments": {"city": "Paris"},
    }
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": '{"weather": "cold"}'}


def test_reply_with_a_call_becomes_a_function_call_item() -> None:
    content = (
        '{\n  "type": "tool_call",\n  "name": "get_weather",\n  "arguments": {\n    "city": "Paris"\n  }\n}'
    )
    response = build_response(_reply(content), _params(tools=[WEATHER]), CONFIG)
    (call,) = response.output
    assert isinstance(call, FunctionCall)
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
    assert re.fullmatch(r"call_[0-9a-f]{32}", call.call_id) and call.id == call.call_id
    assert response.status == "completed"


def test_reply_in_the_measured_name_arguments_shape_is_accepted() -> None:
    measured = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    response = build_response(_reply(measured), _params(tools=[WEATHER]), CONFIG)
    assert [c.name for c in function_calls(response)] == ["get_weather"]


def test_reply_with_an_answer_becomes_a_message() -> None:
    response = build_response(
        _reply('{"type": "answer", "content": "It is cold."}'), _params(tools=[WEATHER]), CONFIG
    )
    assert [item.type for item in response.output] == ["message"]
    assert output_text(response) == "It is cold."


@pytest.mark.parametrize(
    "content",
    [
        '{"type": "tool_call", "name": "get_weather", "arguments": {"city": "Par',  # truncated
        "not json at all",
        '["a list"]',
        '{"type": "tool_call", "name": "unknown_tool", "arguments": {}}',
        '{"type": "tool_call", "name": "get_weather", "arguments": "city=Paris"}',
        '{"type": "answer", "content": 42}',
    ],
)
def test_malformed_reply_is_kept_as_plain_text(content: str) -> None:
    response = build_response(_reply(content, finish_reason="length"), _params(tools=[WEATHER]), CONFIG)
    assert function_calls(response) == []
    assert output_text(response) == content
    assert response.status == "incomplete"


def test_decode_keeps_empty_content() -> None:
    assert decode_tool_reply(None, {"f"}) == (None, [])
    assert decode_tool_reply("", {"f"}) == ("", [])


def test_native_tool_calls_win_over_decoding() -> None:
    reply = _reply(None)
    reply["choices"][0]["message"]["tool_calls"] = [
        {"id": "native", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    ]
    assert [c.call_id for c in function_calls(build_response(reply, _params(tools=[WEATHER]), CONFIG))] == [
        "native"
    ]


def test_without_the_flag_tools_are_sent_natively() -> None:
    body = build_chat_request(_params(tools=[WEATHER]), ChatAdapterConfig(model="m"))
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert "response_format" not in body
