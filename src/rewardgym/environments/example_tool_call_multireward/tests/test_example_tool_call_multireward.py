"""example_tool_call_multireward: NeMo Gym compatibility on the recorded rollouts, reference vectors, tools,
bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rewardgym.environments.example_tool_call_multireward.tools import TOOLS, GetWeatherArgs, get_weather
from rewardgym.environments.example_tool_call_multireward.verifier import (
    ExampleToolCallMultirewardConfig,
    ExampleToolCallMultirewardVerifyRequest,
    parse_arguments,
    verify,
)
from rewardgym.protocol import dump, function_calls
from rewardgym.testing import read_jsonl, recorded_examples

DATA = Path(__file__).resolve().parents[1] / "data"
CONFIG = ExampleToolCallMultirewardConfig()
EXTRAS = ("reward_components", "correctness", "schema_valid", "format", "predicted_calls")
COLLECTOR_KEYS = {"_ng_task_index", "_ng_rollout_index", "agent_ref"}  # stamped by rollout collection
TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "strict": True,
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city to get the weather for."}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    return node


def _matched() -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(example row index, example row, recorded rollout), matched by the user message."""
    return [(r.index, r.row, r.rollout) for r in recorded_examples(DATA)]


def test_compatibility_with_recorded_rollouts() -> None:
    matched = _matched()
    assert [i for i, _, _ in matched] == [0, 1, 2, 3, 4]
    table = ["example_tool_call_multireward row | ours reward (c, s, f) | NeMo Gym reward (c, s, f)"]
    for index, row, rollout in matched:
        assert rollout["_ng_task_index"] == index  # the content match agrees with the recorded task index
        body = ExampleToolCallMultirewardVerifyRequest.model_validate(row | {"response": rollout["response"]})
        recorded = {
            item["call_id"]: json.loads(item["output"])
            for item in rollout["response"]["output"]
            if item["type"] == "function_call_output"
        }
        for call in function_calls(body.response):
            assert (
                dump(get_weather(GetWeatherArgs.model_validate_json(call.arguments), {}))
                == recorded[call.call_id]
            )
        result = dump(verify(body, CONFIG))
        assert set(result) == set(rollout) - COLLECTOR_KEYS
        assert result["reward"] == rollout["reward"]
        for key in EXTRAS:
            assert result[key] == rollout[key], key
        ours = tuple(result["reward_components"].values())
        theirs = tuple(rollout["reward_components"].values())
        table.append(f"{index} | {result['reward']} {ours} | {rollout['reward']} {theirs}")
    print("\n".join(table))


def _call(arguments: str, name: str = "get_weather", i: int = 0) -> dict[str, Any]:
    return {"type": "function_call", "call_id": f"c{i}", "name": name, "arguments": arguments}


def _message(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def _request(
    output: list[dict[str, Any]],
    expected: dict[str, Any] | None = None,
    tools: list[dict[str, Any]] | None = None,
) -> ExampleToolCallMultirewardVerifyRequest:
    row: dict[str, Any] = {
        "responses_create_params": {
            "input": "what's the weather in San Francisco?",
            "tools": [TOOL] if tools is None else tools,
        },
        "response": {"id": "r", "created_at": 0.0, "model": "m", "output": output},
        "expected_call": {"name": "get_weather", "arguments": {"city": "San Francisco"}}
        if expected is None
        else expected,
    }
    return ExampleToolCallMultirewardVerifyRequest.model_validate(row)


SF = '{"city": "San Francisco"}'


@pytest.mark.parametrize(
    ("output", "components"),
    [
        ([_call(SF)], (1.0, 1.0, 1.0)),
        ([_call('{"city": "New York"}')], (0.0, 1.0, 1.0)),
        ([_call("{}")], (0.0, 0.0, 1.0)),
        ([_call("{not valid json")], (0.0, 0.0, 1.0)),
        ([_call(SF), _message("Here you go!")], (1.0, 1.0, 0.0)),
        ([_call(SF, i=0), _call(SF, i=1)], (1.0, 1.0, 0.0)),
    ],
    ids=["correct", "wrong-city", "empty-args", "bad-json", "with-message", "two-calls"],
)
def test_reference_vectors(output: list[dict[str, Any]], components: tuple[float, float, float]) -> None:
    result = verify(_request(output), CONFIG)
    assert (result.correctness, result.schema_valid, result.format) == components
    assert result.reward == sum(components)
    assert result.reward_components == dict(
        zip(("correctness", "schema_valid", "format"), components, strict=True)
    )


def test_no_output_scores_zero() -> None:
    result = verify(_request([]), CONFIG)
    assert (result.reward, result.predicted_calls) == (0.0, [])


def test_message_only_scores_zero() -> None:
    assert verify(_request([_message("It is sunny.")]), CONFIG).reward == 0.0


def test_empty_message_still_breaks_format() -> None:
    empty = {"type": "message", "role": "assistant", "content": []}
    assert verify(_request([_call(SF), empty]), CONFIG).format == 0.0


def test_schema_validity_reads_only_the_first_call() -> None:
    result = verify(_request([_call("{}", i=0), _call(SF, i=1)]), CONFIG)
    assert (result.correctness, result.schema_valid) == (1.0, 0.0)


def test_unknown_tool_requires_nothing() -> None:
    result = verify(_request([_call("{}", name="lookup")], tools=[]), CONFIG)
    assert (result.schema_valid, result.correctness) == (1.0, 0.0)


def test_extra_predicted_keys_are_allowed() -> None:
    result = verify(_request([_call('{"city": "San Francisco", "unit": "C"}')]), CONFIG)
    assert result.correctness == 1.0
    assert [c.model_dump() for c in result.predicted_calls] == [
        {"name": "get_weather", "arguments": {"city": "San Francisco", "unit": "C"}}
    ]


def test_empty_expected_call_never_matches() -> None:
    assert verify(_request([_call(SF)], expected={}), CONFIG).correctness == 0.0


@pytest.mark.parametrize(
    ("arguments", "parsed"),
    [('{"a": 1}', ({"a": 1}, True)), ("[1]", ({}, False)), ('"x"', ({}, False)), ("{bad", ({}, False))],
)
def test_parse_arguments(arguments: str, parsed: tuple[dict[str, Any], bool]) -> None:
    assert parse_arguments(arguments) == parsed


def test_tool_vectors_and_schema() -> None:
    assert [t.__name__ for t in TOOLS] == ["get_weather"]
    assert dump(get_weather(GetWeatherArgs(city="Tokyo"), {})) == {
        "city": "Tokyo",
        "weather_description": "The weather in Tokyo is sunny.",
    }
    with pytest.raises(ValidationError) as info:
        GetWeatherArgs.model_validate({})
    assert info.value.errors()[0]["loc"] == ("city",)
    for row in read_jsonl(DATA / "example.jsonl"):
        (tool,) = row["responses_create_params"]["tools"]
        assert _strip_titles(GetWeatherArgs.model_json_schema()) == tool["parameters"]


def test_missing_response_is_a_validation_error() -> None:
    data = _request([]).model_dump(mode="json")
    del data["response"]
    with pytest.raises(ValidationError) as info:
        ExampleToolCallMultirewardVerifyRequest.model_validate(data)
    assert ("response",) in [e["loc"] for e in info.value.errors()]


def test_missing_expected_call_defaults_to_empty() -> None:
    data = _request([_call(SF)]).model_dump(mode="json")
    del data["expected_call"]
    result = verify(ExampleToolCallMultirewardVerifyRequest.model_validate(data), CONFIG)
    assert (result.correctness, result.reward) == (0.0, 2.0)
