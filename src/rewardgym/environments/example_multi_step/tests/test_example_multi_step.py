"""example_multi_step: NeMo Gym compatibility on the recorded rollouts, reference vectors, tools, bad
input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from rewardgym.environments.example_multi_step.tools import (
    TOOLS,
    ExtractSynonymValuesArgs,
    ExtractSynonymValuesResult,
    GetSynonymValueArgs,
    GetSynonymValueResult,
    extract_synonym_values,
    get_synonym_value,
    synonym_value,
)
from rewardgym.environments.example_multi_step.verifier import (
    ExampleMultiStepConfig,
    ExampleMultiStepVerifyRequest,
    verify,
)
from rewardgym.protocol import FunctionCall, dump, function_calls
from rewardgym.testing import read_jsonl, recorded_examples

DATA = Path(__file__).resolve().parents[1] / "data"
CONFIG = ExampleMultiStepConfig()
EXTRAS = (
    "parsed_synonym_values",
    "accuracy",
    "set_overlap",
    "original_term_minefield_hit",
    "order_instruction_following_failure",
)
ARGS: dict[str, type[BaseModel]] = {
    "get_synonym_value": GetSynonymValueArgs,
    "extract_synonym_values": ExtractSynonymValuesArgs,
}


def _matched() -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(example row index, example row, recorded rollout), matched by the user message."""
    return [(r.index, r.row, r.rollout) for r in recorded_examples(DATA)]


def _run_tool(call: FunctionCall) -> dict[str, Any]:
    if call.name == "get_synonym_value":
        return dump(get_synonym_value(GetSynonymValueArgs.model_validate_json(call.arguments), {}))
    assert call.name == "extract_synonym_values"
    return dump(extract_synonym_values(ExtractSynonymValuesArgs.model_validate_json(call.arguments), {}))


def test_compatibility_with_recorded_rollouts() -> None:
    matched = _matched()
    assert [i for i, _, _ in matched] == [0, 1, 2, 3, 4]
    table = ["example_multi_step row | ours reward, parsed | NeMo Gym reward, parsed"]
    for index, row, rollout in matched:
        body = ExampleMultiStepVerifyRequest.model_validate(row | {"response": rollout["response"]})
        recorded = {
            item["call_id"]: json.loads(item["output"])
            for item in rollout["response"]["output"]
            if item["type"] == "function_call_output"
        }
        calls = function_calls(body.response)
        assert calls, "every recorded rollout uses the tools"
        for call in calls:
            assert _run_tool(call) == recorded[call.call_id]
        result = dump(verify(body, CONFIG))
        assert set(result) == set(rollout)
        assert result["reward"] == rollout["reward"]
        for key in EXTRAS:
            assert result[key] == rollout[key], key
        table.append(
            f"{index} | {result['reward']}, {result['parsed_synonym_values']} | "
            f"{rollout['reward']}, {rollout['parsed_synonym_values']}"
        )
    print("\n".join(table))


def _call(name: str, arguments: str, i: int = 0) -> dict[str, Any]:
    return {"type": "function_call", "call_id": f"c{i}", "name": name, "arguments": arguments}


def _request(output: list[dict[str, Any]]) -> ExampleMultiStepVerifyRequest:
    return ExampleMultiStepVerifyRequest.model_validate(
        {
            "responses_create_params": {"input": "q"},
            "response": {"id": "r", "created_at": 0.0, "model": "m", "output": output},
            "id": 0,
            "expected_synonyms": ["Blazing", "Warm"],
            "expected_synonym_values": [711, 407],
            "minefield_label": "Hot",
            "minefield_label_value": 299,
        }
    )


def _extract(values: list[Any], i: int = 0) -> dict[str, Any]:
    return _call("extract_synonym_values", json.dumps({"synonym_values": values}), i)


@pytest.mark.parametrize(
    ("output", "reward", "overlap", "minefield", "order_failure"),
    [
        ([_extract([711, 407])], 1.0, 1.0, False, False),
        ([_extract([407, 711])], 0.0, 1.0, False, True),
        ([_extract([711, 407, 299])], 0.0, 1.0, True, True),
        ([], 0.0, 0.0, False, False),
        ([_extract([711, 407], 0), _extract([711], 1)], 0.0, 0.5, False, False),
    ],
    ids=["exact", "reversed", "minefield-value", "no-call", "last-call-wins"],
)
def test_reference_vectors(
    output: list[dict[str, Any]], reward: float, overlap: float, minefield: bool, order_failure: bool
) -> None:
    result = verify(_request(output), CONFIG)
    assert (result.reward, result.set_overlap) == (reward, overlap)
    assert result.accuracy is (reward == 1.0)
    assert result.original_term_minefield_hit is minefield
    assert result.order_instruction_following_failure is order_failure


def test_minefield_label_text_is_a_hit() -> None:
    result = verify(_request([_extract(["Hot"])]), CONFIG)
    assert result.original_term_minefield_hit is True
    assert result.reward == 0.0


def test_other_tool_calls_are_not_reports() -> None:
    output = [_extract([711, 407], 0), _call("get_synonym_value", '{"synonym": "Warm"}', 1)]
    result = verify(_request(output), CONFIG)
    assert result.parsed_synonym_values == [711, 407]
    assert result.reward == 1.0


@pytest.mark.parametrize(
    "arguments", ["{not json", "[711, 407]", '{"values": [711, 407]}', '{"synonym_values": 7}']
)
def test_malformed_last_report_scores_zero(arguments: str) -> None:
    result = verify(
        _request([_extract([711, 407], 0), _call("extract_synonym_values", arguments, 1)]), CONFIG
    )
    assert (result.reward, result.parsed_synonym_values, result.set_overlap) == (0.0, [], 0.0)


def test_assistant_message_only_scores_zero() -> None:
    message = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "[711, 407]"}],
    }
    result = verify(_request([message]), CONFIG)
    assert (result.reward, result.parsed_synonym_values) == (0.0, [])


@pytest.mark.parametrize(
    ("synonym", "value"), [("Blazing", 711), ("Warm", 407), ("Hot", 299), ("é", 233), ("", 0)]
)
def test_synonym_value_vectors(synonym: str, value: int) -> None:
    assert synonym_value(synonym) == value
    assert dump(get_synonym_value(GetSynonymValueArgs(synonym=synonym), {})) == {"synonym_value": value}


def test_extract_tool_acknowledges() -> None:
    args = ExtractSynonymValuesArgs.model_validate({"synonym_values": [1, 2]})
    assert dump(extract_synonym_values(args, {})) == {"success": True}


def test_tool_arguments_are_validated() -> None:
    with pytest.raises(ValidationError) as info:
        GetSynonymValueArgs.model_validate({})
    assert info.value.errors()[0]["loc"] == ("synonym",)
    with pytest.raises(ValidationError) as info:
        ExtractSynonymValuesArgs.model_validate({"synonym_values": ["x"]})
    assert info.value.errors()[0]["loc"] == ("synonym_values", 0)


def test_tool_schemas_match_rows() -> None:
    assert [t.__name__ for t in TOOLS] == list(ARGS)
    for row in read_jsonl(DATA / "example.jsonl"):
        tools = {t["name"]: t for t in row["responses_create_params"]["tools"]}
        assert set(tools) == set(ARGS)
        for name, model in ARGS.items():
            schema = model.model_json_schema()
            assert schema.pop("title") == model.__name__  # the server strips titles from tool schemas
            assert schema == tools[name]["parameters"], name


def test_result_schemas_match_tool_descriptions() -> None:
    results: dict[str, type[BaseModel]] = {
        "get_synonym_value": GetSynonymValueResult,
        "extract_synonym_values": ExtractSynonymValuesResult,
    }
    marker = "conforms to the following JSON Schema: "
    for tool in read_jsonl(DATA / "example.jsonl")[0]["responses_create_params"]["tools"]:
        described = json.loads(tool["description"].split(marker, 1)[1])
        schema = results[tool["name"]].model_json_schema()
        schema.pop("title")
        assert schema == described, tool["name"]


@pytest.mark.parametrize(
    "field", ["expected_synonym_values", "minefield_label", "minefield_label_value", "response"]
)
def test_missing_required_field_is_a_validation_error(field: str) -> None:
    data = _request([]).model_dump(mode="json")
    del data[field]
    with pytest.raises(ValidationError) as info:
        ExampleMultiStepVerifyRequest.model_validate(data)
    assert (field,) in [e["loc"] for e in info.value.errors()]
