"""Request shaping (docs/reference/environments.md §2.3) and the full build_chat_request path."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rewardgym.models.chat_adapter import (
    build_chat_passthrough,
    build_chat_request,
    sequential_reasoning_blocked,
)
from rewardgym.models.config import ChatAdapterConfig
from rewardgym.models.errors import UnsupportedRequestError
from rewardgym.protocol import ResponseCreateParams


def _config(**fields: Any) -> ChatAdapterConfig:
    return ChatAdapterConfig(model="served-model", **fields)


def _params(**fields: Any) -> ResponseCreateParams:
    return ResponseCreateParams.model_validate(fields)


def test_extra_body_vector_row_beats_config_and_keeps_config_only_keys() -> None:
    config = _config(extra_body={"guided_json": '{"type": "object"}', "min_tokens": 10})
    params = _params(
        input="Hi", metadata={"extra_body": json.dumps({"min_tokens": 20, "new_param": "value"})}
    )
    body = build_chat_request(params, config)
    assert body["min_tokens"] == 20
    assert body["new_param"] == "value"
    assert body["guided_json"] == '{"type": "object"}'
    assert body["metadata"] == params.metadata  # metadata itself stays in the body


def test_request_fields_beat_extra_body_and_overrides_beat_everything() -> None:
    config = _config(extra_body={"temperature": 0.1, "seed": 1}, sampling_overrides={"top_p": 0.5})
    params = _params(
        input="Hi", temperature=0.9, top_p=0.99, metadata={"extra_body": '{"seed": 7, "temperature": 0.2}'}
    )
    body = build_chat_request(params, config)
    assert body["temperature"] == 0.9  # the request's own field wins over extra_body
    assert body["seed"] == 7  # per-rollout seed from the row
    assert body["top_p"] == 0.5  # sampling_overrides last
    assert body["model"] == "served-model"


def test_chat_template_kwargs_merge_row_wins_and_absent_when_empty() -> None:
    config = _config(chat_template_kwargs={"enable_thinking": True, "x": 1})
    params = _params(input="Hi", metadata={"chat_template_kwargs": '{"enable_thinking": false}'})
    assert build_chat_request(params, config)["chat_template_kwargs"] == {"enable_thinking": False, "x": 1}
    assert "chat_template_kwargs" not in build_chat_request(_params(input="Hi"), _config())


@pytest.mark.parametrize(
    ("raw", "pattern"),
    [
        ("{not json", "metadata.extra_body is not valid JSON"),
        ("[1, 2]", "metadata.extra_body must be a JSON object"),
    ],
)
def test_bad_metadata_json_is_an_error_naming_the_field(raw: str, pattern: str) -> None:
    with pytest.raises(UnsupportedRequestError, match=pattern):
        build_chat_request(_params(input="Hi", metadata={"extra_body": raw}), _config())


def test_reasoning_history_moves_first_think_block_to_reasoning_fields() -> None:
    params = _params(
        input=[
            {"role": "user", "content": "q"},
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "R1"}, {"type": "summary_text", "text": "R2"}],
            },
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A"}]},
            {"role": "user", "content": "again"},
        ]
    )
    assistant = build_chat_request(params, _config())["messages"][1]
    assert assistant == {"role": "assistant", "content": "A", "reasoning_content": "R1", "reasoning": "R1"}
    dropped = build_chat_request(params, _config(uses_interleaved_reasoning=False))["messages"][1]
    assert dropped == {"role": "assistant", "content": "A"}
    kept = build_chat_request(params, _config(uses_reasoning_parser=False))["messages"][1]
    assert kept == {"role": "assistant", "content": "<think>R1</think><think>R2</think>A"}
    preserved = build_chat_request(params, _config(preserve_reasoning_in_assistant_content=True))["messages"][
        1
    ]
    assert preserved["content"] == "<think>R1</think><think>R2</think>A"


def test_developer_role_replaced_only_when_configured() -> None:
    params = _params(input=[{"role": "developer", "content": "d"}, {"role": "user", "content": "u"}])
    assert build_chat_request(params, _config())["messages"][0]["role"] == "developer"
    replaced = build_chat_request(params, _config(replace_developer_role_with_system=True))
    assert replaced["messages"][0] == {"role": "system", "content": "d"}


def test_null_top_logprobs_is_removed() -> None:
    params = ResponseCreateParams.model_validate({"input": "Hi", "top_logprobs": None})
    assert "top_logprobs" not in build_chat_request(params, _config())
    params = ResponseCreateParams.model_validate({"input": "Hi", "top_logprobs": 2})
    assert build_chat_request(params, _config())["top_logprobs"] == 2


def test_input_params_are_not_mutated() -> None:
    params = _params(input=[{"role": "user", "content": "q"}], metadata={"extra_body": '{"seed": 3}'})
    before = params.model_dump()
    build_chat_request(params, _config(replace_developer_role_with_system=True, sampling_overrides={"n": 1}))
    assert params.model_dump() == before


def test_sequential_reasoning_block_only_when_disabled_and_last_turn_empty() -> None:
    params = _params(
        input=[
            {"role": "user", "content": "q"},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}]},
        ]
    )
    allowed = _config()
    blocked = _config(sequential_reasoning_allowed=False)
    assert not sequential_reasoning_blocked(build_chat_request(params, allowed), allowed)
    assert sequential_reasoning_blocked(build_chat_request(params, blocked), blocked)
    answered = _params(input=[{"role": "user", "content": "q"}])
    assert not sequential_reasoning_blocked(build_chat_request(answered, blocked), blocked)


def test_chat_passthrough_applies_config_but_keeps_tools() -> None:
    config = _config(extra_body={"seed": 1, "top_k": 5}, sampling_overrides={"temperature": 0.0})
    body: dict[str, Any] = {
        "model": "caller-model",
        "messages": [{"role": "assistant", "content": "<think>r</think>x"}],
        "seed": 2,
        "temperature": 1.0,
        "tools": [{"type": "function", "function": {"name": "f"}}],
    }
    out = build_chat_passthrough(body, config)
    assert out["model"] == "served-model"
    assert out["seed"] == 2 and out["top_k"] == 5 and out["temperature"] == 0.0
    assert out["tools"] == body["tools"]
    assert out["messages"] == [
        {"role": "assistant", "content": "x", "reasoning_content": "r", "reasoning": "r"}
    ]
    assert body["messages"][0]["content"] == "<think>r</think>x"  # caller's body untouched
