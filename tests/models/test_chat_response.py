"""Chat Completion → Response conversion (docs/reference/environments.md §2.4), locally built replies."""

from __future__ import annotations

import re
from typing import Any

import pytest

from rewardgym.models.chat_adapter import (
    build_response,
    chat_to_response,
    context_overflow_response,
    empty_completion,
    is_context_overflow,
)
from rewardgym.models.config import ChatAdapterConfig
from rewardgym.models.errors import UpstreamReplyError
from rewardgym.protocol import (
    FunctionCall,
    Message,
    Reasoning,
    ResponseCreateParams,
    dump,
    function_calls,
    output_text,
)

CONFIG = ChatAdapterConfig(model="served-model")
LLAMA_CPP_OVERFLOW = (
    '{"error":{"code":400,"message":"request (731 tokens) exceeds the available context size (512 tokens), '
    'try increasing it","type":"exceed_context_size_error","n_prompt_tokens":731,"n_ctx":512}}'
)  # verbatim from the real llama.cpp server
PARAMS = ResponseCreateParams.model_validate({"input": "Hi"})


def _completion(message: dict[str, Any], finish_reason: str = "stop", usage: Any = None) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "upstream-name",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}
        ],
    }
    if usage is not None:
        reply["usage"] = usage
    return reply


def _summaries(item: Any) -> list[str]:
    assert isinstance(item, Reasoning)
    return [s.text for s in item.summary]


# -- <think> vectors of docs/reference/environments.md §2.8 --------------------------------------------------
def test_think_in_the_middle() -> None:
    content = "This is some main content.<think>Here is the reasoning.</think>More content."
    response = build_response(_completion({"content": content}), PARAMS, CONFIG)
    reasoning, message = response.output
    assert _summaries(reasoning) == ["Here is the reasoning."]
    assert isinstance(message, Message) and message.text() == "This is some main content.More content."


def test_two_think_blocks() -> None:
    content = "First part.<think>Thought 1.</think>Second part.<think>Thought 2.</think>Final part."
    response = build_response(_completion({"content": content}), PARAMS, CONFIG)
    reasoning, message = response.output
    assert _summaries(reasoning) == ["Thought 1.", "Thought 2."]
    assert isinstance(message, Message) and message.text() == "First part.Second part.Final part."


def test_leading_think_blocks_give_one_reasoning_item_then_message() -> None:
    content = "<think>A</think><think>B</think>Your order has been shipped."
    response = build_response(_completion({"content": content}), PARAMS, CONFIG)
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert _summaries(response.output[0]) == ["A", "B"]
    assert output_text(response) == "Your order has been shipped."


def test_reasoning_content_field_is_rewrapped_and_content_not_stripped() -> None:
    reply = _completion({"content": "\n\nAnswer: B", "reasoning_content": "Let me think."})
    response = build_response(reply, PARAMS, CONFIG)
    assert _summaries(response.output[0]) == ["Let me think."]
    assert output_text(response) == "\n\nAnswer: B"


def test_vllm_reasoning_field_is_used_when_reasoning_content_is_absent() -> None:
    response = build_response(_completion({"content": "ok", "reasoning": "hmm"}), PARAMS, CONFIG)
    assert _summaries(response.output[0]) == ["hmm"]


def test_without_reasoning_parser_think_text_stays_and_reasoning_fields_are_an_error() -> None:
    config = ChatAdapterConfig(model="m", uses_reasoning_parser=False)
    response = build_response(_completion({"content": "<think>x</think>y"}), PARAMS, config)
    assert [item.type for item in response.output] == ["message"]
    assert output_text(response) == "<think>x</think>y"
    with pytest.raises(UpstreamReplyError, match="uses_reasoning_parser"):
        build_response(_completion({"content": "y", "reasoning_content": "x"}), PARAMS, config)


# -- items, ids, order ---------------------------------------------------------------------------------
def test_tool_calls_become_function_call_items_after_reasoning_and_message() -> None:
    reply = _completion(
        {
            "content": "<think>need weather</think>Let me check.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"P"}'},
                },
                {"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
            ],
        },
        finish_reason="tool_calls",
    )
    response = build_response(reply, PARAMS, CONFIG)
    assert [item.type for item in response.output] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]
    calls = function_calls(response)
    assert [(c.id, c.call_id, c.name, c.arguments, c.status) for c in calls] == [
        ("call_a", "call_a", "get_weather", '{"city":"P"}', "completed"),
        ("call_b", "call_b", "get_time", "{}", "completed"),
    ]
    assert response.status == "completed" and response.incomplete_details is None


def test_calls_only_reply_has_no_message_item() -> None:
    reply = _completion(
        {
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        }
    )
    assert [item.type for item in build_response(reply, PARAMS, CONFIG).output] == ["function_call"]


def test_reasoning_only_reply_has_no_message_item() -> None:
    assert [
        i.type for i in build_response(_completion({"content": "<think>x</think>"}), PARAMS, CONFIG).output
    ] == ["reasoning"]


def test_empty_reply_is_one_empty_message() -> None:
    response = build_response(_completion({"content": None}), PARAMS, CONFIG)
    assert len(response.output) == 1
    message = response.output[0]
    assert isinstance(message, Message)
    assert dump(message)["content"] == [{"type": "output_text", "text": "", "annotations": []}]
    assert message.role == "assistant" and message.status == "completed"


def test_ids_and_envelope() -> None:
    params = ResponseCreateParams.model_validate(
        {
            "input": "Hi",
            "instructions": "Sys",
            "temperature": 0.3,
            "top_p": 0.8,
            "metadata": {"extra_body": '{"seed": 1}'},
            "max_output_tokens": 50,
            "tools": [{"type": "function", "name": "f", "strict": True, "parameters": {"type": "object"}}],
            "tool_choice": "auto",
        }
    )
    response = build_response(_completion({"content": "<think>r</think>hello"}), params, CONFIG)
    assert re.fullmatch(r"resp_[0-9a-f]{32}", response.id)
    assert re.fullmatch(r"rs_[0-9a-f]{32}", response.output[0].id or "")
    assert re.fullmatch(r"msg_[0-9a-f]{32}", response.output[1].id or "")
    data = dump(response)
    assert data["model"] == "served-model"
    assert data["created_at"] == 1700000000.0
    assert data["object"] == "response"
    assert data["instructions"] == "Sys"
    assert data["temperature"] == 0.3 and data["top_p"] == 0.8 and data["max_output_tokens"] == 50
    assert data["metadata"] == {"extra_body": '{"seed": 1}'}
    assert data["tools"] == [
        {"type": "function", "name": "f", "strict": True, "parameters": {"type": "object"}}
    ]
    assert data["tool_choice"] == "auto" and data["parallel_tool_calls"] is True
    assert data["error"] is None
    again = build_response(_completion({"content": "hello"}), params, CONFIG)
    assert again.id != response.id


# -- finish reason, usage ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("finish", "status", "reason"),
    [
        ("length", "incomplete", "max_output_tokens"),
        ("content_filter", "incomplete", "content_filter"),
        ("stop", "completed", None),
        ("tool_calls", "completed", None),
        (None, "completed", None),
    ],
)
def test_finish_reason_mapping(finish: str | None, status: str, reason: str | None) -> None:
    response = build_response(_completion({"content": "x"}, finish_reason=finish), PARAMS, CONFIG)  # type: ignore[arg-type]
    assert response.status == status
    assert (response.incomplete_details.reason if response.incomplete_details else None) == reason


def test_usage_mapping_with_details() -> None:
    usage = {
        "prompt_tokens": 11,
        "completion_tokens": 7,
        "total_tokens": 99,  # copied, never recomputed
        "prompt_tokens_details": {"cached_tokens": 4},
        "completion_tokens_details": {"reasoning_tokens": 3},
    }
    data = dump(build_response(_completion({"content": "x"}, usage=usage), PARAMS, CONFIG))
    assert data["usage"] == {
        "input_tokens": 11,
        "output_tokens": 7,
        "total_tokens": 99,
        "input_tokens_details": {"cached_tokens": 4},
        "output_tokens_details": {"reasoning_tokens": 3},
    }


@pytest.mark.parametrize(
    ("usage_extra", "cached", "reasoning"),
    [
        ({"cached_input_tokens": 5, "reasoning_output_tokens": 2}, 5, 2),
        ({"cache_read_input_tokens": 6}, 6, None),
        ({"prompt_tokens_details": {"cached_tokens": None}, "cached_input_tokens": 8}, 8, None),
        ({"cached_input_tokens": -1, "cache_read_input_tokens": 9}, 9, None),
        ({"cached_input_tokens": "7", "reasoning_output_tokens": True}, None, None),
        ({}, None, None),
    ],
)
def test_usage_detail_fallbacks(
    usage_extra: dict[str, Any], cached: int | None, reasoning: int | None
) -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3, **usage_extra}
    response = build_response(_completion({"content": "x"}, usage=usage), PARAMS, CONFIG)
    assert response.usage is not None
    assert (
        response.usage.input_tokens_details is not None and response.usage.output_tokens_details is not None
    )
    assert response.usage.input_tokens_details.cached_tokens == cached
    assert response.usage.output_tokens_details.reasoning_tokens == reasoning


def test_no_usage_means_null_usage() -> None:
    data = dump(build_response(_completion({"content": "x"}), PARAMS, CONFIG))
    assert data["usage"] is None


# -- context overflow and local replies ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (400, '{"message": "This model\'s maximum context length is 4096 tokens."}', True),
        (400, "max_tokens must be at most 100", True),
        (400, LLAMA_CPP_OVERFLOW, True),
        (400, '{"error": "invalid tool schema"}', False),
        (500, "context length exceeded", False),
    ],
)
def test_context_overflow_detection(status: int, body: str, expected: bool) -> None:
    assert is_context_overflow(status, body) is expected


def test_context_overflow_response_is_incomplete_with_one_empty_message() -> None:
    response = context_overflow_response(PARAMS, CONFIG)
    assert response.status == "incomplete"
    assert (
        response.incomplete_details is not None and response.incomplete_details.reason == "max_output_tokens"
    )
    assert [item.type for item in response.output] == ["message"]
    assert output_text(response) == ""
    assert response.model == "served-model" and response.usage is None


def test_content_filter_completion_for_blocked_sequential_reasoning() -> None:
    response = chat_to_response(empty_completion("m", "content_filter"), PARAMS, CONFIG)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None and response.incomplete_details.reason == "content_filter"


# -- bad upstream replies ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("payload", "pattern"),
    [
        ([1, 2], "not a JSON object"),
        ({"choices": []}, "no choices"),
        ({"choices": [{"message": {"role": "robot"}}]}, r"choices\.0\.message\.role"),
    ],
)
def test_bad_upstream_reply_is_an_upstream_error(payload: Any, pattern: str) -> None:
    with pytest.raises(UpstreamReplyError, match=pattern):
        build_response(payload, PARAMS, CONFIG)


def test_missing_envelope_fields_are_filled() -> None:
    payload = {"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}
    response = build_response(payload, PARAMS, CONFIG)
    assert output_text(response) == "hi" and response.created_at > 0


def test_function_call_item_is_a_function_call_model() -> None:
    reply = _completion(
        {"tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    )
    (item,) = build_response(reply, PARAMS, CONFIG).output
    assert isinstance(item, FunctionCall)
