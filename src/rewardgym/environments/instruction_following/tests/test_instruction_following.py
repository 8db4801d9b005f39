"""instruction_following: NeMo Gym compatibility, reference test vectors, check rules and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from rewardgym.environments.instruction_following.instructions import REGISTRY, evaluate
from rewardgym.environments.instruction_following.text import (
    count_sentences,
    count_words,
    split_into_sentences,
    word_tokenize,
)
from rewardgym.environments.instruction_following.verifier import (
    InstructionFollowingConfig,
    InstructionFollowingVerifyRequest,
    InstructionFollowingVerifyResponse,
    checked_text,
    verify,
)
from rewardgym.protocol import Response

DATA = Path(__file__).resolve().parents[1] / "data"
CONFIG = InstructionFollowingConfig()


def _lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines()]


def _prompt(row: dict[str, Any]) -> str:
    return str(row["responses_create_params"]["input"][0]["content"])


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _response(*items: dict[str, Any]) -> dict[str, Any]:
    return {"id": "resp_1", "created_at": 0.0, "model": "m", "object": "response", "output": list(items)}


def _row(ids: list[str], kwargs: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "id": 1,
        "instruction_id_list": ids,
        "prompt": "p",
        "kwargs": kwargs,
        "responses_create_params": {"input": [{"role": "user", "content": "p"}]},
        **extra,
    }


def _verify(row: dict[str, Any], *items: dict[str, Any]) -> InstructionFollowingVerifyResponse:
    request = InstructionFollowingVerifyRequest.model_validate({**row, "response": _response(*items)})
    return verify(request, CONFIG)


# --- (1) compatibility with NeMo Gym's recorded rollouts ------------------------------------------------
ROLLOUTS = _lines("example_rollouts.jsonl")
ROWS_BY_PROMPT = {_prompt(row): row for row in _lines("example.jsonl")}


def _ours(rollout: dict[str, Any]) -> InstructionFollowingVerifyResponse:
    row = ROWS_BY_PROMPT[_prompt(rollout)]
    request = InstructionFollowingVerifyRequest.model_validate({**row, "response": rollout["response"]})
    return verify(request, CONFIG)


def test_every_rollout_matches_one_example_row() -> None:
    assert len(ROLLOUTS) == 5
    assert sorted(ROWS_BY_PROMPT[_prompt(r)]["id"] for r in ROLLOUTS) == [2228, 8654, 17616, 44654, 44655]


@pytest.mark.parametrize("index", range(len(ROLLOUTS)))
def test_recorded_rollout_reward_and_columns(index: int) -> None:
    rollout = ROLLOUTS[index]
    ours = _ours(rollout)
    assert ours.reward == rollout["reward"]
    assert ours.follow_instruction_list == rollout["follow_instruction_list"]
    assert ours.follow_all_instructions == rollout["follow_all_instructions"]
    # The recording predates verifier_metadata: its top-level copies equal our migrated metadata.
    assert ours.verifier_metadata.instruction_id_list == rollout["instruction_id_list"]
    assert ours.verifier_metadata.kwargs == rollout["kwargs"]


def test_compatibility_table(capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["instruction_following: row id | ours | NeMo Gym"]
    for rollout in ROLLOUTS:
        ours = _ours(rollout)
        row_id = ROWS_BY_PROMPT[_prompt(rollout)]["id"]
        lines.append(f"  {row_id:>6} | {ours.reward} {ours.follow_instruction_list} | {rollout['reward']}")
        assert ours.reward == rollout["reward"]
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    assert sum(_ours(r).reward for r in ROLLOUTS) / len(ROLLOUTS) == pytest.approx(0.4)


# --- (2) test vectors of docs/reference/environments.md §11 ----------------------------------------------
@pytest.mark.parametrize(
    ("ids", "kwargs", "text", "followed", "reward"),
    [
        (
            ["detectable_format:title"],
            [{}],
            "<<My Title>>\n\nThis is the content of my response.",
            [True],
            1.0,
        ),
        (["detectable_format:title"], [{}], "This response has no title.", [False], 0.0),
        (["punctuation:no_comma"], [None], "Hello world without commas at all", [True], 1.0),
        (["punctuation:no_comma"], [None], "Hello, world with commas", [False], 0.0),
        (
            ["length_constraints:number_words"],
            [{"num_words": 6, "relation": "at least"}],
            "This response has exactly six words.",
            [True],
            1.0,
        ),
        (
            ["length_constraints:number_words"],
            [{"num_words": 10, "relation": "at least"}],
            "Too short.",
            [False],
            0.0,
        ),
        (
            ["detectable_format:title", "punctuation:no_comma"],
            [None, None],
            "<<My Great Title>>\n\nThis response has commas, which should fail.",
            [True, False],
            0.0,
        ),
    ],
)
def test_reference_vectors(
    ids: list[str], kwargs: list[Any], text: str, followed: list[bool], reward: float
) -> None:
    result = _verify(_row(ids, kwargs), _message(text))
    assert result.follow_instruction_list == followed
    assert result.reward == reward
    assert result.follow_all_instructions is all(followed)


def test_fraction_mode_gives_the_share_followed() -> None:
    row = _row(["detectable_format:title", "punctuation:no_comma"], [None, None], grading_mode="fraction")
    result = _verify(row, _message("<<My Great Title>>\n\n with a comma here, okay."))
    assert result.follow_instruction_list == [True, False]
    assert result.reward == 0.5


def test_verifier_metadata_wins_over_legacy_fields() -> None:
    row = _row(["punctuation:no_comma"], [None])
    row["verifier_metadata"] = {
        "instruction_id_list": ["detectable_format:title"],
        "prompt": "q",
        "kwargs": [None],
    }
    result = _verify(row, _message("no title, but a comma"))
    assert result.verifier_metadata.instruction_id_list == ["detectable_format:title"]
    assert result.verifier_metadata.prompt == "q"
    assert result.follow_instruction_list == [False]


def test_legacy_fields_fill_only_missing_metadata_keys() -> None:
    row = _row(["punctuation:no_comma"], [None], grading_mode="fraction")
    row["verifier_metadata"] = {"prompt": "own prompt"}
    request = InstructionFollowingVerifyRequest.model_validate({**row, "response": _response(_message("x"))})
    assert request.verifier_metadata.prompt == "own prompt"
    assert request.verifier_metadata.instruction_id_list == ["punctuation:no_comma"]
    assert request.verifier_metadata.grading_mode == "fraction"


def test_empty_instruction_list_binary_one_fraction_zero() -> None:
    assert _verify(_row([], []), _message("x")).reward == 1.0
    assert _verify(_row([], [], grading_mode="fraction"), _message("x")).reward == 0.0


def test_pairs_are_zipped_to_the_shorter_list() -> None:
    result = _verify(_row(["punctuation:no_comma", "detectable_format:title"], [None]), _message("a, b"))
    assert result.follow_instruction_list == [False]


# --- the checked text: last output item, first content part ---------------------------------------------
def test_checked_text_is_first_part_of_last_item() -> None:
    item = _message("first")
    item["content"].append({"type": "output_text", "text": "second", "annotations": []})
    response = Response.model_validate(_response(_message("earlier"), item))
    assert checked_text(response) == "first"


@pytest.mark.parametrize(
    "last",
    [
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "<<A Title>>"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "<<A Title>>"}]},
    ],
)
def test_last_item_without_content_checks_empty_text(last: dict[str, Any]) -> None:
    result = _verify(_row(["detectable_format:title"], [None]), _message("<<A Title>>"), last)
    assert result.follow_instruction_list == [False]
    assert result.reward == 0.0


def test_reasoning_item_with_content_is_checked() -> None:
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": "<<T>>"}],
    }
    result = _verify(_row(["detectable_format:title"], [None]), reasoning)
    assert result.follow_instruction_list == [True]


# --- (3) bad input ------------------------------------------------------------------------------------------
def test_no_assistant_message_scores_zero_without_crash() -> None:
    result = _verify(_row(["detectable_format:title", "punctuation:no_comma"], [None, None]))
    assert result.follow_instruction_list == [False, True]
    assert result.reward == 0.0


def _error_fields(data: dict[str, Any]) -> set[str]:
    with pytest.raises(ValidationError) as info:
        InstructionFollowingVerifyRequest.model_validate(data)
    return {".".join(str(part) for part in error["loc"]) for error in info.value.errors()}


def test_missing_id_is_a_validation_error_naming_it() -> None:
    row = _row(["punctuation:no_comma"], [None])
    del row["id"]
    assert "id" in _error_fields({**row, "response": _response()})


def test_missing_metadata_key_is_a_validation_error_naming_it() -> None:
    row = _row(["punctuation:no_comma"], [None])
    del row["prompt"]
    assert "verifier_metadata.prompt" in _error_fields({**row, "response": _response()})


def test_missing_metadata_entirely_names_the_field() -> None:
    row = {"id": 1, "responses_create_params": {"input": "hi"}, "response": _response()}
    assert "verifier_metadata" in _error_fields(row)


def test_unknown_grading_mode_is_rejected() -> None:
    row = _row(["punctuation:no_comma"], [None], grading_mode="mean")
    assert "verifier_metadata.grading_mode" in _error_fields({**row, "response": _response()})


def test_unknown_instruction_and_bad_kwargs_count_as_not_followed() -> None:
    assert evaluate("no_such:instruction", None, "text") is False
    assert evaluate("punctuation:no_comma", {"unexpected": 1}, "text") is False
    assert evaluate("length_constraints:number_words", {"num_words": 3}, "one two three") is False
    assert (
        evaluate("length_constraints:number_words", {"num_words": "3", "relation": "at least"}, "a b c")
        is False
    )
    assert (
        evaluate("length_constraints:number_words", {"num_words": 3, "relation": "at least"}, "a b c") is True
    )


def test_none_kwargs_values_are_dropped() -> None:
    assert evaluate("detectable_format:title", {"unused": None}, "<<t>>") is True


# --- registry and text measures -----------------------------------------------------------------------------
def test_registry_has_the_54_open_instruct_ids() -> None:
    assert len(REGISTRY) == 54
    for entry in REGISTRY.values():
        assert entry.args_model.model_json_schema()["type"] == "object"


def test_word_and_sentence_measures() -> None:
    assert count_words("Hello, world! It's 2 o'clock.") == 7
    assert count_sentences("Dr. Smith went home. He was tired. Was he?") == 3  # untrained Punkt: 4
    assert count_sentences("We met Gen. Lee on Jan. 5 at the St. Louis office. It rained.") == 2
    assert word_tokenize("Don't stop. Go!") == ["Do", "n't", "stop", ".", "Go", "!"]
    assert split_into_sentences("Mr. Smith paid $3.50 at example.com. Then he left!") == [
        "Mr. Smith paid $3.50 at example.com.",
        "Then he left!",
    ]
    assert split_into_sentences("") == []


def test_config_yaml_declares_the_server_and_its_agent() -> None:
    root = DATA.parent
    config = yaml.safe_load((root / "configs" / "instruction_following.yaml").read_text(encoding="utf-8"))
    server = config["instruction_following"]["resources_servers"]["instruction_following"]
    assert server["entrypoint"] == "app.py"
    assert server["domain"]
    catalogue = {"entrypoint", "domain", "verified", "description", "value", "verified_url"}
    InstructionFollowingConfig.model_validate(
        {key: value for key, value in server.items() if key not in catalogue}
    )
    agent = config["instruction_following_simple_agent"]["responses_api_agents"]["simple_agent"]
    assert agent["resources_server"] == {"type": "resources_servers", "name": "instruction_following"}
    assert agent["model_server"] == {"type": "responses_api_models", "name": "policy_model"}
    assert (root / agent["datasets"][0]["jsonl_fpath"]).is_file()
