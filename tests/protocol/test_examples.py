"""Every real NeMo Gym row and recorded response validates against our wire types, losslessly."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

from rewardgym.protocol import (
    FunctionCall,
    Response,
    ResponseCreateParams,
    RunRequest,
    dump,
    function_calls,
    last_assistant_message,
    output_text,
)
from tests.conftest import EXAMPLES

# The twelve environments whose NeMo Gym examples are in tests/data/nemo_gym (a fixed list, so a missing
# folder fails its tests instead of silently parametrizing fewer).
ENVIRONMENTS = [
    "code_gen",
    "equivalence_rule",
    "example_multi_step",
    "example_session_state_mgmt",
    "example_single_tool_call",
    "example_tool_call_multireward",
    "instruction_following",
    "math_with_judge",
    "mcqa",
    "string_match",
    "structured_outputs",
    "xlam_fc",
]


def _lines(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_all_twelve_reference_environments_are_present() -> None:
    assert sorted(p.name for p in EXAMPLES.iterdir()) == ENVIRONMENTS


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_example_rows_validate_as_run_requests(env: str) -> None:
    rows = _lines(EXAMPLES / env / "example.jsonl")
    assert rows
    for row in rows:
        request = RunRequest.model_validate(row)
        assert request.responses_create_params.input


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_recorded_responses_round_trip_without_loss(env: str) -> None:
    rollouts = _lines(EXAMPLES / env / "example_rollouts.jsonl")
    assert rollouts
    for rollout in rollouts:
        recorded = rollout["response"]
        response = Response.model_validate(recorded)
        again = orjson.loads(orjson.dumps(dump(response)))
        assert again == recorded


def test_create_params_reject_unknown_keys() -> None:
    with pytest.raises(ValidationError) as info:
        ResponseCreateParams.model_validate({"input": "hi", "temprature": 0.5})
    assert "temprature" in str(info.value)


def test_easy_input_message_without_type_is_a_message() -> None:
    params = ResponseCreateParams.model_validate({"input": [{"role": "user", "content": "hi"}]})
    assert not isinstance(params.input, str)
    assert params.input[0].type == "message"


def _response(output: list[dict[str, object]]) -> Response:
    return Response.model_validate({"id": "r", "created_at": 0, "model": "m", "output": output})


def test_output_text_concatenates_message_parts_only() -> None:
    response = _response(
        [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A"}]},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "tool says"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "B"}, {"type": "output_text", "text": "C"}],
            },
        ]
    )
    assert output_text(response) == "ABC"
    assert last_assistant_message(response) == "BC"
    calls = function_calls(response)
    assert [c.name for c in calls] == ["f"]
    assert isinstance(calls[0], FunctionCall)


def test_helpers_on_empty_output() -> None:
    response = _response([])
    assert output_text(response) == ""
    assert last_assistant_message(response) is None
    assert function_calls(response) == []


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_recorded_create_params_validate(env: str) -> None:
    """Recorded rollouts echo every create-param, some as null (parallel_tool_calls, tool_choice…)."""
    for rollout in _lines(EXAMPLES / env / "example_rollouts.jsonl"):
        params = ResponseCreateParams.model_validate(rollout["responses_create_params"])
        assert dump(params) == rollout["responses_create_params"]
