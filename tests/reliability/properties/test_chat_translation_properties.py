"""More Responses ⇄ Chat Completions properties.

The item round trip (Responses items → chat → replayed replies) is in tests/models/test_roundtrip_property.py.

This file covers the other direction and the request envelope:

- an upstream chat reply (``<think>`` blocks, text, tool calls) → Response → sent back as input → the same
  chat assistant message (reasoning re-wrapped, text and calls unchanged);
- ``instructions`` merge with the leading system/developer messages; sampling fields map one to one and
  are absent when unset; tools and ``tool_choice`` keep name, description and parameters;
- usage maps field by field with the cached/reasoning fallbacks; ``finish_reason`` maps to the status;
- any upstream JSON is a ChatCompletion or an ``UpstreamReplyError`` — never another exception.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewardgym.models.chat_adapter import build_response, chat_to_response, map_usage, parse_chat_completion
from rewardgym.models.chat_request import responses_to_chat, think
from rewardgym.models.config import ChatAdapterConfig
from rewardgym.models.errors import UpstreamReplyError
from rewardgym.protocol import ChatCompletion, ChatUsage, ResponseCreateParams, dump

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CONFIG = ChatAdapterConfig(model="m", uses_reasoning_parser=True)

# No "<" so text never contains a tag of its own.
TEXT = st.text(alphabet=st.characters(blacklist_characters="<", blacklist_categories=["Cs"]), max_size=12)
NONEMPTY = TEXT.filter(bool)
IDENT = st.from_regex(r"\A[a-z][a-z0-9_]{0,10}\Z")


def _completion(message: dict[str, Any], finish: str | None = "stop", usage: Any = None) -> ChatCompletion:
    body: dict[str, Any] = {
        "id": "c",
        "created": 0,
        "model": "m",
        "choices": [{"message": message, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage
    return ChatCompletion.model_validate(body)


@SETTINGS
@given(
    st.lists(NONEMPTY, max_size=3),
    TEXT,
    st.lists(st.tuples(IDENT, TEXT), max_size=3),
)
def test_an_upstream_reply_sent_back_as_input_is_the_same_assistant_message(
    blocks: list[str], text: str, calls: list[tuple[str, str]]
) -> None:
    content = "".join(think(b) for b in blocks) + text
    tool_calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}
        for i, (name, args) in enumerate(calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    response = chat_to_response(_completion(message), ResponseCreateParams(input="q"), CONFIG)
    output = [dump(item) for item in response.output]

    again = responses_to_chat(ResponseCreateParams.model_validate({"input": output}))["messages"]
    assert len(again) == 1
    assert again[0]["role"] == "assistant"
    assert again[0]["content"] == (content or None)
    assert again[0].get("tool_calls", []) == tool_calls
    summaries = [s["text"] for item in output if item["type"] == "reasoning" for s in item["summary"]]
    assert summaries == blocks


@SETTINGS
@given(
    st.one_of(st.none(), TEXT),
    st.lists(st.tuples(st.sampled_from(["system", "developer"]), TEXT), max_size=3),
    st.lists(st.tuples(st.sampled_from(["user", "system"]), TEXT), min_size=1, max_size=3),
)
def test_instructions_merge_with_the_leading_system_messages(
    instructions: str | None, lead: list[tuple[str, str]], rest: list[tuple[str, str]]
) -> None:
    if rest[0][0] == "system":
        rest = [("user", rest[0][1]), *rest[1:]]  # the lead run ends where the rest starts
    items = [{"role": role, "content": text} for role, text in [*lead, *rest]]
    params: dict[str, Any] = {"input": items}
    if instructions is not None:
        params["instructions"] = instructions
    messages = responses_to_chat(ResponseCreateParams.model_validate(params))["messages"]
    tail = [{"role": role, "content": text} for role, text in rest]
    if instructions is None:
        assert messages == items
    else:
        merged = "\n\n".join([instructions, *(text for _, text in lead)])
        assert messages == [{"role": "system", "content": merged}, *tail]


@SETTINGS
@given(
    st.one_of(st.none(), st.floats(min_value=0, max_value=2)),
    st.one_of(st.none(), st.floats(min_value=0, max_value=1)),
    st.one_of(st.none(), st.integers(min_value=1, max_value=10**6)),
    st.one_of(st.none(), st.sampled_from(["low", "medium", "high"])),
)
def test_sampling_fields_map_one_to_one_and_only_when_set(
    temperature: float | None, top_p: float | None, max_tokens: int | None, effort: str | None
) -> None:
    params: dict[str, Any] = {"input": "q"}
    given: tuple[tuple[str, float | int | None], ...] = (
        ("temperature", temperature),
        ("top_p", top_p),
        ("max_output_tokens", max_tokens),
    )
    for key, value in given:
        if value is not None:
            params[key] = value
    if effort is not None:
        params["reasoning"] = {"effort": effort}
    body = responses_to_chat(ResponseCreateParams.model_validate(params))
    expected: dict[str, float | int | str | None] = {
        "temperature": temperature,
        "top_p": top_p,
        "max_tokens": max_tokens,
        "reasoning_effort": effort,
    }
    for name, wanted in expected.items():
        assert body.get(name) == wanted
        assert (name in body) == (wanted is not None)
    assert "tools" not in body and "tool_choice" not in body and "parallel_tool_calls" not in body


@SETTINGS
@given(
    st.lists(
        st.tuples(
            IDENT,
            st.one_of(st.none(), TEXT),
            st.one_of(st.none(), st.dictionaries(IDENT, st.sampled_from([{"type": "string"}]), max_size=3)),
        ),
        min_size=1,
        max_size=3,
        unique_by=lambda t: t[0],
    ),
    st.data(),
)
def test_tools_and_tool_choice_keep_their_content(
    tools: list[tuple[str, Any, Any]], data: st.DataObject
) -> None:
    declared = []
    for name, description, properties in tools:
        tool: dict[str, Any] = {"type": "function", "name": name, "strict": True}
        if description is not None:
            tool["description"] = description
        if properties is not None:
            tool["parameters"] = {"type": "object", "properties": properties}
        declared.append(tool)
    name = tools[0][0]
    choice = data.draw(st.sampled_from(["auto", "none", "required", {"type": "function", "name": name}]))
    body = responses_to_chat(
        ResponseCreateParams.model_validate({"input": "q", "tools": declared, "tool_choice": choice})
    )
    for tool, chat in zip(declared, body["tools"], strict=True):
        assert chat["type"] == "function"
        expected = {k: tool[k] for k in ("name", "description", "parameters") if k in tool}
        assert chat["function"] == expected
    if isinstance(choice, dict):
        assert body["tool_choice"] == {"type": "function", "function": {"name": name}}
    else:
        assert body["tool_choice"] == choice


COUNT = st.one_of(st.none(), st.integers(min_value=-5, max_value=10**9), st.booleans(), st.just("7"))


@SETTINGS
@given(
    st.integers(min_value=0, max_value=10**9),
    st.integers(min_value=0, max_value=10**9),
    COUNT,
    COUNT,
    COUNT,
    COUNT,
)
def test_usage_maps_field_by_field_with_fallbacks(
    prompt: int, completion: int, cached: Any, cached_alt: Any, reasoning: Any, reasoning_alt: Any
) -> None:
    def count(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    raw: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "cached_input_tokens": cached_alt,
        "reasoning_output_tokens": reasoning_alt,
    }
    if isinstance(cached, int) and not isinstance(cached, bool):
        raw["prompt_tokens_details"] = {"cached_tokens": cached}
    if isinstance(reasoning, int) and not isinstance(reasoning, bool):
        raw["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    usage = map_usage(ChatUsage.model_validate(raw))
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (
        prompt,
        completion,
        prompt + completion,
    )
    details = dump(usage)
    first_cached = count(raw.get("prompt_tokens_details", {}).get("cached_tokens"))
    assert details["input_tokens_details"]["cached_tokens"] == (
        first_cached if first_cached is not None else count(cached_alt)
    )
    first_reasoning = count(raw.get("completion_tokens_details", {}).get("reasoning_tokens"))
    assert details["output_tokens_details"]["reasoning_tokens"] == (
        first_reasoning if first_reasoning is not None else count(reasoning_alt)
    )


@SETTINGS
@given(st.one_of(st.none(), st.sampled_from(["stop", "length", "content_filter", "tool_calls", "other"])))
def test_finish_reason_sets_the_status(finish: str | None) -> None:
    response = chat_to_response(
        _completion({"role": "assistant", "content": "x"}, finish), ResponseCreateParams(input="q"), CONFIG
    )
    reasons = {"length": "max_output_tokens", "content_filter": "content_filter"}
    if finish in reasons:
        assert response.status == "incomplete"
        assert response.incomplete_details is not None
        assert response.incomplete_details.reason == reasons[finish]
    else:
        assert response.status == "completed"
        assert response.incomplete_details is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["assistant", "assistant", "user", "robot"])},
    optional={
        "content": st.none()
        | TEXT
        | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}))
        | JSON,
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {
                    "id": IDENT,
                    "function": st.fixed_dictionaries({"name": IDENT}, optional={"arguments": TEXT}),
                }
            ),
            max_size=2,
        )
        | JSON,
        "reasoning_content": st.none() | TEXT | JSON,
    },
)
CHATISH = st.fixed_dictionaries(
    {
        "choices": st.lists(
            st.fixed_dictionaries(
                {"message": st.one_of(MESSAGE, MESSAGE, MESSAGE, JSON)},
                optional={"finish_reason": st.none() | st.sampled_from(["stop", "length"]) | JSON},
            ),
            min_size=1,
            max_size=2,
        )
        | JSON
    },
    optional={
        "usage": st.fixed_dictionaries({}, optional={"prompt_tokens": st.integers(), "total_tokens": JSON})
        | JSON,
        "created": st.integers(min_value=0, max_value=2**40) | JSON,
        "id": TEXT | JSON,
    },
)


@SETTINGS
@given(st.one_of(CHATISH, CHATISH, JSON))
def test_any_upstream_json_is_a_response_or_an_upstream_reply_error(payload: Any) -> None:
    try:
        completion = parse_chat_completion(payload, model="m")
    except UpstreamReplyError as exc:
        assert str(exc).startswith("upstream reply")
        return
    assert completion.choices
    try:
        response = build_response(payload, ResponseCreateParams(input="q"), CONFIG)
    except UpstreamReplyError as exc:  # e.g. reasoning fields without the reasoning parser
        assert str(exc)
        return
    assert response.model == "m"
    assert response.output  # at least an (empty) assistant message, a reasoning item or a call
