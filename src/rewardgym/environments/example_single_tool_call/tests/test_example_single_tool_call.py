"""example_single_tool_call: NeMo Gym compatibility on the recorded rollouts, tool vectors, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rewardgym.environments.example_single_tool_call.tools import (
    TOOLS,
    GetWeatherArgs,
    GetWeatherResult,
    get_weather,
)
from rewardgym.environments.example_single_tool_call.verifier import (
    ExampleSingleToolCallConfig,
    ExampleSingleToolCallVerifyRequest,
    ExampleSingleToolCallVerifyResponse,
    verify,
)
from rewardgym.protocol import FunctionCall, dump, function_calls
from rewardgym.testing import read_jsonl, recorded_examples

DATA = Path(__file__).resolve().parents[1] / "data"
CONFIG = ExampleSingleToolCallConfig()


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def _matched() -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(example row index, example row, recorded rollout), matched by the user message."""
    return [(r.index, r.row, r.rollout) for r in recorded_examples(DATA)]


def _run_tool(call: FunctionCall) -> dict[str, Any]:
    assert call.name == "get_weather"
    return dump(get_weather(GetWeatherArgs.model_validate_json(call.arguments), {}))


def test_compatibility_with_recorded_rollouts() -> None:
    matched = _matched()
    assert [i for i, _, _ in matched] == [0, 1, 2, 3, 4]
    table = ["example_single_tool_call row | ours | NeMo Gym"]
    for index, row, rollout in matched:
        body = ExampleSingleToolCallVerifyRequest.model_validate(row | {"response": rollout["response"]})
        # Replay the recorded tool calls through our tool: same answers as the recorded tool outputs.
        outputs = {
            item["call_id"]: json.loads(item["output"])
            for item in rollout["response"]["output"]
            if item["type"] == "function_call_output"
        }
        for call in function_calls(body.response):
            assert _run_tool(call) == outputs[call.call_id]
        result = dump(verify(body, CONFIG))
        assert set(result) == set(rollout) == {"responses_create_params", "response", "reward"}
        assert result["reward"] == rollout["reward"]
        table.append(f"{index} | {result['reward']} | {rollout['reward']}")
    print("\n".join(table))


def test_rows_with_and_without_tool_calls_are_covered() -> None:
    calls = [
        len([i for i in r["response"]["output"] if i["type"] == "function_call"]) for _, _, r in _matched()
    ]
    assert calls == [1, 1, 1, 0, 0]


def _request(output: list[dict[str, Any]]) -> ExampleSingleToolCallVerifyRequest:
    return ExampleSingleToolCallVerifyRequest.model_validate(
        {
            "responses_create_params": {"input": "hi"},
            "response": {"id": "r", "created_at": 0.0, "model": "m", "output": output},
        }
    )


@pytest.mark.parametrize(
    "output",
    [
        [],
        [{"type": "reasoning", "id": "rs", "summary": []}],
        [{"type": "function_call", "call_id": "c", "name": "get_weather", "arguments": "{not json"}],
        [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}],
    ],
)
def test_any_trajectory_scores_one(output: list[dict[str, Any]]) -> None:
    result = verify(_request(output), CONFIG)
    assert isinstance(result, ExampleSingleToolCallVerifyResponse)
    assert result.reward == 1.0


def test_get_weather_vector() -> None:
    result = get_weather(GetWeatherArgs.model_validate({"city": "Tokyo"}), {})
    assert isinstance(result, GetWeatherResult)
    assert (
        result.model_dump_json() == '{"city":"Tokyo","weather_description":"The weather in Tokyo is cold."}'
    )


def test_get_weather_requires_city() -> None:
    with pytest.raises(ValidationError) as info:
        GetWeatherArgs.model_validate({})
    assert info.value.errors()[0]["loc"] == ("city",)


def test_get_weather_ignores_unknown_keys() -> None:
    assert GetWeatherArgs.model_validate({"city": "Oslo", "unit": "C"}).city == "Oslo"


def test_tool_schema_matches_rows() -> None:
    assert [t.__name__ for t in TOOLS] == ["get_weather"]
    for row in read_jsonl(DATA / "example.jsonl"):
        (tool,) = row["responses_create_params"]["tools"]
        assert tool["name"] == "get_weather"
        assert _strip_titles(GetWeatherArgs.model_json_schema()) == tool["parameters"]


def test_missing_response_is_a_validation_error() -> None:
    with pytest.raises(ValidationError) as info:
        ExampleSingleToolCallVerifyRequest.model_validate({"responses_create_params": {"input": "hi"}})
    assert ("response",) in [e["loc"] for e in info.value.errors()]
