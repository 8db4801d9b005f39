"""Responses → Chat Completions request translation (docs/reference/environments.md §2.2)."""

from __future__ import annotations

from typing import Any

import pytest

from rewardgym.models.chat_request import responses_to_chat
from rewardgym.models.errors import UnsupportedRequestError
from rewardgym.protocol import ChatCompletionCreateParams, ResponseCreateParams


def _chat(**params: Any) -> dict[str, Any]:
    body = responses_to_chat(ResponseCreateParams.model_validate(params))
    ChatCompletionCreateParams.model_validate(body)  # always a valid chat body
    return body


def test_string_input_becomes_one_user_message_with_a_text_part() -> None:
    assert _chat(input="Hi there")["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Hi there"}]}
    ]


def test_message_roles_and_content_parts() -> None:
    body = _chat(
        input=[
            {"role": "developer", "content": "Be terse."},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Look:"},
                    {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                ],
            },
        ]
    )
    assert body["messages"] == [
        {"role": "developer", "content": "Be terse."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "auto"}},
            ],
        },
    ]


def test_assistant_buffer_merges_reasoning_text_and_calls_then_tool_outputs() -> None:
    body = _chat(
        input=[
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Two cities."}]},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Checking."}],
            },
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "get_weather",
                "arguments": '{"city":"Paris"}',
            },
            {"type": "function_call", "call_id": "c2", "name": "get_weather", "arguments": '{"city":"Rome"}'},
            {"type": "function_call_output", "call_id": "c1", "output": '{"w":"cold"}'},
            {"type": "function_call_output", "call_id": "c2", "output": '{"w":"warm"}'},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
        ]
    )
    assert body["messages"] == [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": "<think>Two cities.</think>Checking.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"w":"cold"}'},
        {"role": "tool", "tool_call_id": "c2", "content": '{"w":"warm"}'},
        {"role": "assistant", "content": "Done."},
    ]


def test_calls_only_assistant_turn_has_null_content() -> None:
    body = _chat(
        input=[
            {"role": "user", "content": "x"},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        ]
    )
    assert body["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }


def test_empty_summaries_add_nothing_and_multiple_summaries_each_get_think_tags() -> None:
    body = _chat(
        input=[
            {"role": "user", "content": "q"},
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "A"}, {"type": "summary_text", "text": ""}],
            },
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "B"}]},
        ]
    )
    assert body["messages"][1] == {"role": "assistant", "content": "<think>A</think><think>B</think>"}


def test_list_tool_output_keeps_input_text_parts() -> None:
    body = _chat(
        input=[
            {"type": "function_call_output", "call_id": "c", "output": [{"type": "input_text", "text": "42"}]}
        ]
    )
    assert body["messages"] == [
        {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "42"}]}
    ]


def test_instructions_merge_with_leading_system_and_developer_messages() -> None:
    body = _chat(
        instructions="Follow the rules.",
        input=[
            {"role": "system", "content": "You are helpful."},
            {"role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
            {"role": "user", "content": "Hi"},
            {"role": "system", "content": "late system stays"},
        ],
    )
    assert body["messages"] == [
        {"role": "system", "content": "Follow the rules.\n\nYou are helpful.\n\nBe brief."},
        {"role": "user", "content": "Hi"},
        {"role": "system", "content": "late system stays"},
    ]


def test_instructions_alone_become_a_leading_system_message() -> None:
    body = _chat(instructions="Sys.", input="Hi")
    assert body["messages"][0] == {"role": "system", "content": "Sys."}
    assert body["messages"][1]["role"] == "user"


def test_scalar_fields_tools_and_dropped_responses_only_fields() -> None:
    body = _chat(
        input="Hi",
        max_output_tokens=64,
        temperature=0.5,
        top_p=0.9,
        reasoning={"effort": "low"},
        metadata={"k": "v"},
        user="u1",
        text={"format": {"type": "text"}},
        truncation="disabled",
        include=["x"],
        background=False,
        max_tool_calls=3,
        tools=[
            {
                "type": "function",
                "name": "get_weather",
                "description": "Weather.",
                "strict": True,
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
            {"type": "function", "name": "noop"},
        ],
        tool_choice={"type": "function", "name": "get_weather"},
        parallel_tool_calls=False,
    )
    messages = body.pop("messages")
    assert messages == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    assert body == {
        "max_tokens": 64,
        "temperature": 0.5,
        "top_p": 0.9,
        "reasoning_effort": "low",
        "metadata": {"k": "v"},
        "user": "u1",
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather.",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
            },
            {"type": "function", "function": {"name": "noop"}},
        ],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "parallel_tool_calls": False,
    }


def test_without_tools_tool_choice_and_parallel_calls_are_dropped() -> None:
    body = _chat(input="Hi", tool_choice="auto", parallel_tool_calls=True)
    assert "tool_choice" not in body and "parallel_tool_calls" not in body and "tools" not in body


def test_unset_fields_are_not_sent() -> None:
    assert set(_chat(input="Hi")) == {"messages"}


def test_required_tool_choice_without_tools_is_an_error_naming_the_field() -> None:
    with pytest.raises(UnsupportedRequestError, match="tool_choice"):
        _chat(input="Hi", tool_choice="required")


def test_unsupported_content_part_is_an_error_naming_the_item() -> None:
    params = {"input": [{"role": "user", "content": [{"type": "output_text", "text": "x"}]}]}
    with pytest.raises(UnsupportedRequestError, match=r"input\[0\]\.content\[0\].*output_text"):
        _chat(**params)


def test_unsupported_tool_output_part_is_an_error() -> None:
    params = {
        "input": [{"type": "function_call_output", "call_id": "c", "output": [{"type": "input_image"}]}]
    }
    with pytest.raises(UnsupportedRequestError, match=r"input\[0\]\.output\[0\]"):
        _chat(**params)


def test_chat_shaped_tool_calls_on_an_assistant_message_join_the_buffer() -> None:
    call = {"id": "c9", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    body = _chat(input=[{"role": "assistant", "content": "x", "tool_calls": [call]}])
    assert body["messages"] == [{"role": "assistant", "content": "x", "tool_calls": [call]}]
    with pytest.raises(UnsupportedRequestError, match=r"input\[0\]\.tool_calls\[0\]"):
        _chat(input=[{"role": "assistant", "content": "x", "tool_calls": ["nope"]}])
