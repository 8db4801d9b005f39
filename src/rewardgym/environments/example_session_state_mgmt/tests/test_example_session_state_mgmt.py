"""example_session_state_mgmt: compatibility on the recorded rollouts (replayed through our tools), session
vectors, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from rewardgym.environments.example_session_state_mgmt.tools import (
    COUNTER_KEY,
    TOOLS,
    ExampleSessionStateMgmtSeedSessionRequest,
    GetCounterValueArgs,
    IncrementCounterArgs,
    get_counter_value,
    increment_counter,
    seed_session,
)
from rewardgym.environments.example_session_state_mgmt.verifier import (
    ExampleSessionStateMgmtConfig,
    ExampleSessionStateMgmtVerifyRequest,
    verify,
)
from rewardgym.protocol import FunctionCall, dump, function_calls
from rewardgym.testing import read_jsonl, recorded_examples

DATA = Path(__file__).resolve().parents[1] / "data"
CONFIG = ExampleSessionStateMgmtConfig()
ARGS: dict[str, type[BaseModel]] = {
    "increment_counter": IncrementCounterArgs,
    "get_counter_value": GetCounterValueArgs,
}


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    return node


def _matched() -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(example row index, example row, recorded rollout), matched by the user message."""
    return [(r.index, r.row, r.rollout) for r in recorded_examples(DATA)]


def _run_tool(call: FunctionCall, state: dict[str, Any]) -> dict[str, Any]:
    if call.name == "increment_counter":
        return dump(increment_counter(IncrementCounterArgs.model_validate_json(call.arguments), state))
    assert call.name == "get_counter_value"
    return dump(get_counter_value(GetCounterValueArgs.model_validate_json(call.arguments), state))


def test_compatibility_with_recorded_rollouts() -> None:
    matched = _matched()
    assert [i for i, _, _ in matched] == [0, 1, 2, 3, 4]
    table = ["example_session_state_mgmt row | ours reward (final counter) | NeMo Gym reward"]
    for index, row, rollout in matched:
        # Replay the episode as the agent ran it: seed the session, then every recorded call in order.
        state: dict[str, Any] = {}
        seed_session(ExampleSessionStateMgmtSeedSessionRequest.model_validate(row), state)
        assert state == {COUNTER_KEY: row["initial_count"]}
        body = ExampleSessionStateMgmtVerifyRequest.model_validate(row | {"response": rollout["response"]})
        recorded = {
            item["call_id"]: json.loads(item["output"])
            for item in rollout["response"]["output"]
            if item["type"] == "function_call_output"
        }
        calls = function_calls(body.response)
        assert [c.name for c in calls] == ["increment_counter", "increment_counter", "get_counter_value"]
        for call in calls:
            assert _run_tool(call, state) == recorded[call.call_id]
        result = dump(verify(body, CONFIG, state))
        assert set(result) == set(rollout) == {"responses_create_params", "response", "reward"}
        assert result["reward"] == rollout["reward"]
        table.append(f"{index} | {result['reward']} ({state[COUNTER_KEY]}) | {rollout['reward']}")
    print("\n".join(table))


def test_session_tool_vectors() -> None:
    first: dict[str, Any] = {}
    none = GetCounterValueArgs()
    assert dump(get_counter_value(none, first)) == {"count": 0}
    assert dump(increment_counter(IncrementCounterArgs(count=2), first)) == {"success": True}
    assert dump(get_counter_value(none, first)) == {"count": 2}
    fresh: dict[str, Any] = {}
    increment_counter(IncrementCounterArgs(count=4), fresh)
    assert dump(get_counter_value(none, fresh)) == {"count": 4}
    increment_counter(IncrementCounterArgs(count=3), fresh)
    assert dump(get_counter_value(none, fresh)) == {"count": 7}
    assert dump(get_counter_value(none, first)) == {"count": 2}  # sessions are isolated


def test_second_seed_does_not_overwrite() -> None:
    state: dict[str, Any] = {}
    seed_session(ExampleSessionStateMgmtSeedSessionRequest.model_validate(_row(initial=3)), state)
    increment_counter(IncrementCounterArgs(count=1), state)
    seed_session(ExampleSessionStateMgmtSeedSessionRequest.model_validate(_row(initial=9)), state)
    assert state[COUNTER_KEY] == 4


def test_get_counter_value_ignores_its_body() -> None:
    assert GetCounterValueArgs.model_validate({"anything": 1}) == GetCounterValueArgs()


def _row(initial: int = 3, expected: int = 6) -> dict[str, Any]:
    return {
        "responses_create_params": {"input": "add 1 then add 2 then get the count"},
        "response": {"id": "r", "created_at": 0.0, "model": "m", "output": []},
        "initial_count": initial,
        "expected_count": expected,
    }


def _episode(increments: list[int], *, seed: int | None = 3, expected: int = 6) -> float:
    state: dict[str, Any] = {}
    if seed is not None:
        seed_session(ExampleSessionStateMgmtSeedSessionRequest.model_validate(_row(initial=seed)), state)
    for count in increments:
        increment_counter(IncrementCounterArgs(count=count), state)
    body = ExampleSessionStateMgmtVerifyRequest.model_validate(_row(expected=expected))
    return verify(body, CONFIG, state).reward


def test_derived_vectors() -> None:
    assert _episode([1, 2]) == 1.0
    assert _episode([]) == 0.0
    assert _episode([1, 2, 1]) == 0.0
    assert _episode([6], seed=None) == 1.0  # an unseeded session counts from 0


def test_unknown_session_scores_zero() -> None:
    body = ExampleSessionStateMgmtVerifyRequest.model_validate(_row(expected=0))
    assert verify(body, CONFIG, None).reward == 0.0
    assert verify(body, CONFIG, {}).reward == 0.0
    assert verify(body, CONFIG, {COUNTER_KEY: 0}).reward == 1.0


def test_tool_schemas_match_rows() -> None:
    assert [t.__name__ for t in TOOLS] == list(ARGS)
    for row in read_jsonl(DATA / "example.jsonl"):
        tools = {t["name"]: t for t in row["responses_create_params"]["tools"]}
        for name, model in ARGS.items():
            assert _strip_titles(model.model_json_schema()) == tools[name]["parameters"], name


def test_missing_fields_are_validation_errors() -> None:
    data = _row()
    del data["expected_count"]
    with pytest.raises(ValidationError) as info:
        ExampleSessionStateMgmtVerifyRequest.model_validate(data)
    assert ("expected_count",) in [e["loc"] for e in info.value.errors()]
    del data["initial_count"]
    with pytest.raises(ValidationError) as info:
        ExampleSessionStateMgmtSeedSessionRequest.model_validate(data)
    assert ("initial_count",) in [e["loc"] for e in info.value.errors()]
    with pytest.raises(ValidationError) as info:
        IncrementCounterArgs.model_validate({"count": "two"})
    assert info.value.errors()[0]["loc"] == ("count",)
