"""xlam_fc: NeMo Gym compatibility, reference test vectors and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from rewardgym.environments.xlam_fc.verifier import (
    XlamFcConfig,
    XlamFcVerifyRequest,
    XlamFcVerifyResponse,
    decode_arguments,
    verify,
)

DATA = Path(__file__).resolve().parents[1] / "data"
PARAMS = {"input": [{"role": "user", "content": "q"}]}
COLUMNS = ("num_expected", "num_predicted", "num_correct", "predicted_calls")


def _lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines()]


def _call(name: str, arguments: Any, call_id: str = "c1") -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": text}


def _response(*items: dict[str, Any]) -> dict[str, Any]:
    return {"id": "resp_1", "created_at": 0.0, "model": "m", "output": list(items)}


def _verify(expected: list[dict[str, Any]] | None, *items: dict[str, Any]) -> XlamFcVerifyResponse:
    body: dict[str, Any] = {"responses_create_params": PARAMS, "response": _response(*items)}
    if expected is not None:
        body["expected_answers"] = expected
    return verify(XlamFcVerifyRequest.model_validate(body), XlamFcConfig())


def _counts(result: XlamFcVerifyResponse) -> tuple[float, int, int, int]:
    return result.reward, result.num_expected, result.num_predicted, result.num_correct


# --- (1) compatibility with NeMo Gym's recorded rollouts ------------------------------------------------
ROLLOUTS = _lines("example_rollouts.jsonl")


def _query(row: dict[str, Any]) -> str:
    return str(row["responses_create_params"]["input"][-1]["content"])


ROWS_BY_QUERY = {_query(row): row for row in _lines("example.jsonl")}


def _ours(rollout: dict[str, Any]) -> XlamFcVerifyResponse:
    row = ROWS_BY_QUERY[_query(rollout)]
    return verify(
        XlamFcVerifyRequest.model_validate({**row, "response": rollout["response"]}), XlamFcConfig()
    )


@pytest.mark.parametrize("index", range(len(ROLLOUTS)))
def test_recorded_rollout_reward_and_columns(index: int) -> None:
    rollout = ROLLOUTS[index]
    ours = _ours(rollout).model_dump(mode="json")
    assert ours["reward"] == rollout["reward"]
    for column in COLUMNS:
        assert ours[column] == rollout[column], column
    assert set(ours) == {"responses_create_params", "response", "reward", *COLUMNS}


def test_compatibility_table(capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["xlam_fc: row id | ours (expected/predicted/correct) | NeMo Gym"]
    by_id = {}
    for rollout in ROLLOUTS:
        ours = _ours(rollout)
        by_id[ROWS_BY_QUERY[_query(rollout)]["id"]] = (ours, rollout)
        assert ours.reward == rollout["reward"]
    for row_id, (ours, rollout) in sorted(by_id.items()):
        counts = f"{ours.num_expected}/{ours.num_predicted}/{ours.num_correct}"
        lines.append(f"  {row_id} | {ours.reward} ({counts}) | {rollout['reward']}")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    assert [by_id[i][0].reward for i in range(5)] == [1.0, 1.0, 0.0, 0.0, 1.0]


# --- (2) test vectors of docs/reference/environments.md §13 ----------------------------------------------
SF: dict[str, Any] = {"name": "get_weather", "arguments": {"city": "San Francisco"}}
BETA: dict[str, Any] = {"name": "live_giveaways_by_type", "arguments": {"type": "beta"}}
GAME: dict[str, Any] = {"name": "live_giveaways_by_type", "arguments": {"type": "game"}}
T3MA: dict[str, Any] = {
    "name": "t3ma",
    "arguments": {"symbol": "ETH/BTC", "interval": "1h", "time_period": 14},
}


@pytest.mark.parametrize(
    ("predicted", "expected", "outcome"),
    [
        ([_call("get_weather", {"city": "San Francisco"})], [SF], (1.0, 1, 1, 1)),
        (
            [
                _call("live_giveaways_by_type", {"type": "beta"}),
                _call("live_giveaways_by_type", {"type": "game"}, "c2"),
            ],
            [BETA, GAME],
            (1.0, 2, 2, 2),
        ),
        (
            [
                _call("live_giveaways_by_type", {"type": "beta"}),
                _call("live_giveaways_by_type", {"type": "loot"}, "c2"),
            ],
            [BETA, GAME],
            (0.0, 2, 2, 1),
        ),
        ([_call("get_weather", {"city": "New York"})], [SF], (0.0, 1, 1, 0)),
        ([], [SF], (0.0, 1, 0, 0)),
        ([_call("get_weather", {"city": "San Francisco", "units": "celsius"})], [SF], (1.0, 1, 1, 1)),
        ([], [], (1.0, 0, 0, 0)),
        ([_call("t3ma", {"symbol": "ETH/BTC", "interval": "1h", "time_period": 14})], [T3MA], (1.0, 1, 1, 1)),
    ],
)
def test_reference_vectors(
    predicted: list[dict[str, Any]], expected: list[dict[str, Any]], outcome: tuple[float, int, int, int]
) -> None:
    assert _counts(_verify(expected, *predicted)) == outcome


def test_values_compare_type_sensitively_like_python() -> None:
    as_string = {"symbol": "ETH/BTC", "interval": "1h", "time_period": "14"}
    assert _verify([T3MA], _call("t3ma", as_string)).reward == 0.0
    assert _verify([T3MA], _call("t3ma", {**T3MA["arguments"], "time_period": 14.0})).reward == 1.0
    flag = {"name": "f", "arguments": {"on": 1}}
    assert _verify([flag], _call("f", {"on": True})).reward == 1.0


def test_each_predicted_call_matches_once_and_extras_fail() -> None:
    twice = [
        _call("get_weather", {"city": "San Francisco"}),
        _call("get_weather", {"city": "San Francisco"}, "c2"),
    ]
    assert _counts(_verify([SF], *twice)) == (0.0, 1, 2, 1)
    assert _counts(_verify([SF, SF], twice[0])) == (0.0, 2, 1, 1)
    assert _counts(_verify([], twice[0])) == (0.0, 0, 1, 0)


def test_calls_are_collected_across_the_whole_trajectory() -> None:
    output = {"type": "function_call_output", "call_id": "c1", "output": '{"detail":"Not Found"}'}
    message = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}
    first = _call("live_giveaways_by_type", {"type": "beta"})
    second = _call("live_giveaways_by_type", {"type": "game"}, "c2")
    result = _verify([BETA, GAME], first, output, message, second, message)
    assert _counts(result) == (1.0, 2, 2, 2)
    assert [call.model_dump() for call in result.predicted_calls] == [BETA, GAME]


# --- (3) bad input ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "decoded"), [('{"a": 1', {}), ("[1, 2]", {}), ("7", {}), ('{"a": [1]}', {"a": [1]})]
)
def test_arguments_that_are_not_a_json_object_decode_to_empty(raw: str, decoded: dict[str, Any]) -> None:
    assert decode_arguments(raw) == decoded


def test_invalid_arguments_still_count_as_a_prediction() -> None:
    result = _verify([SF], _call("get_weather", '{"city": "San'))
    assert _counts(result) == (0.0, 1, 1, 0)
    assert result.predicted_calls[0].arguments == {}


def test_no_assistant_message_scores_zero_without_crash() -> None:
    assert _counts(_verify([SF])) == (0.0, 1, 0, 0)


def test_missing_expected_answers_defaults_to_none_expected() -> None:
    assert _counts(_verify(None)) == (1.0, 0, 0, 0)


def test_missing_responses_create_params_is_a_validation_error_naming_it() -> None:
    with pytest.raises(ValidationError) as info:
        XlamFcVerifyRequest.model_validate({"response": _response()})
    assert "responses_create_params" in {error["loc"][0] for error in info.value.errors()}


def test_expected_call_without_name_is_a_validation_error_naming_it() -> None:
    body = {
        "responses_create_params": PARAMS,
        "response": _response(),
        "expected_answers": [{"arguments": {}}],
    }
    with pytest.raises(ValidationError) as info:
        XlamFcVerifyRequest.model_validate(body)
    assert ("expected_answers", 0, "name") in {error["loc"] for error in info.value.errors()}


def test_config_yaml_declares_the_server_and_its_agent() -> None:
    root = DATA.parent
    config = yaml.safe_load((root / "configs" / "xlam_fc.yaml").read_text(encoding="utf-8"))
    server = config["xlam_fc"]["resources_servers"]["xlam_fc"]
    assert server["entrypoint"] == "app.py"
    assert server["domain"]
    catalogue = {"entrypoint", "domain", "verified", "description", "value", "verified_url"}
    XlamFcConfig.model_validate({key: value for key, value in server.items() if key not in catalogue})
    agent = config["xlam_fc_simple_agent"]["responses_api_agents"]["simple_agent"]
    assert agent["resources_server"] == {"type": "resources_servers", "name": "xlam_fc"}
    assert agent["model_server"] == {"type": "responses_api_models", "name": "policy_model"}
    assert (root / agent["datasets"][0]["jsonl_fpath"]).is_file()
