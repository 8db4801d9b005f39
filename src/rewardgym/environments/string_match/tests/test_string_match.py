"""string_match verifier: NeMo Gym compatibility on the recorded rollouts, reference vectors, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rewardgym.environments.string_match.grader import grade
from rewardgym.environments.string_match.verifier import (
    ExtractionMode,
    StringMatchConfig,
    StringMatchVerifyRequest,
    extract_answer,
    verify,
)
from rewardgym.protocol import dump

DATA = Path(__file__).resolve().parents[1] / "data"
COLLECTION_KEYS = {"_ng_task_index", "_ng_rollout_index", "agent_ref"}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _prompt(row: dict[str, Any]) -> str:
    content = row["responses_create_params"]["input"][0]["content"]
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


def _message(text: str, role: str = "assistant") -> dict[str, Any]:
    return {
        "type": "message",
        "role": role,
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _request(output: list[dict[str, Any]], expected: str, **fields: Any) -> StringMatchVerifyRequest:
    return StringMatchVerifyRequest.model_validate(
        {
            "responses_create_params": {"input": [{"role": "user", "content": "Q?"}]},
            "response": {"id": "resp_1", "created_at": 0.0, "model": "dummy", "output": output},
            "expected_answer": expected,
            **fields,
        }
    )


def test_compatibility_with_recorded_rollouts() -> None:
    examples = _lines(DATA / "example.jsonl")
    by_prompt = {_prompt(row): index for index, row in enumerate(examples)}
    table = ["row | ours reward/extracted | NeMo Gym reward/extracted"]
    seen = []
    for rollout in _lines(DATA / "example_rollouts.jsonl"):
        index = by_prompt[_prompt(rollout)]
        assert rollout["_ng_task_index"] == index
        seen.append(index)
        body = StringMatchVerifyRequest.model_validate({**examples[index], "response": rollout["response"]})
        result = verify(body, StringMatchConfig())
        table.append(
            f"{index} | {result.reward} / {result.extracted_answer} | "
            f"{rollout['reward']} / {rollout['extracted_answer']}"
        )
        assert result.reward == rollout["reward"]
        assert result.extracted_answer == rollout["extracted_answer"]
        assert result.expected_answer == rollout["expected_answer"]
        assert set(dump(result)) == set(rollout) - COLLECTION_KEYS
    assert sorted(seen) == [0, 1, 2, 3, 4]
    print("\nstring_match compatibility\n" + "\n".join(table))


GRADER_VECTORS: list[tuple[str, str, float]] = [
    ("oven", "oven", 1.0),
    ("oven", "Oven", 1.0),
    ("oven", "  oven  ", 1.0),
    ("oven", "stove", 0.0),
    ("blue", "Blue", 1.0),
    # Derived with the real functions (docs/reference/environments.md §9).
    ("1000", "1,000", 1.0),
    ("1000000", "1,000,000", 0.98),
    ("80", "80.0", 1.0),
    ("80", "80 km/h", 0.0),
    ("3.14", "3.1416", 0.98),
    ("100", "99", 0.98),
    ("90°", "90", 0.98),
    ("New York", "NY", 1.0),
    ("Paris", '"Paris".', 0.0),
    ("Pacific Ocean", "the Pacific Ocean", 0.0),
    # Further forms: LaTeX wrappers, lists, quotes, units.
    ("42", "\\boxed{42}", 1.0),
    ("x^2", "$x^2$", 1.0),
    ("apples, pears", "apples pears", 1.0),
    ("Paris", "'Paris'", 1.0),
    ("5 km", "5", 0.98),
    ("x cm", "x", 1.0),
    ("c d", "\\boxed{c \\emph{d", 1.0),
]


@pytest.mark.parametrize(("gt", "pred", "expected"), GRADER_VECTORS)
def test_grader(gt: str, pred: str, expected: float) -> None:
    assert grade(gt, pred) == expected


def test_case_sensitive_switch() -> None:
    output = [_message("Final answer: Blue")]
    assert verify(_request(output, "blue"), StringMatchConfig()).reward == 1.0
    assert verify(_request(output, "blue", case_sensitive=True), StringMatchConfig()).reward == 0.0
    assert verify(_request(output, " Blue ", case_sensitive=True), StringMatchConfig()).reward == 1.0


EXTRACTION_VECTORS: list[tuple[str, ExtractionMode, str | None]] = [
    ("Some reasoning here. The answer is \\boxed{42}.", "boxed", "42"),
    ("First line of reasoning.\nSecond line.\noven", "last_line", "oven"),
    ("Answer: 15\nFinal Answer: 16", "final_answer", "16"),
    ("Reasoning...\nFinal answer: Saturn.", "final_answer", "Saturn"),
    ("Final answer： 7", "final_answer", "7"),
    ("No marker, but \\boxed{9}", "final_answer", "9"),
    ("nothing here", "final_answer", None),
    ("\\boxed{\\text{ Paris }} then \\boxed{broken", "boxed", "Paris"),
    ("\\boxed{unbalanced", "boxed", None),
    ("  whole text  ", "full_response", "whole text"),
    ("a\n\n  last  \n\n", "last_line", "last"),
]


@pytest.mark.parametrize(("text", "mode", "extracted"), EXTRACTION_VECTORS)
def test_extraction(text: str, mode: ExtractionMode, extracted: str | None) -> None:
    assert extract_answer(text.strip(), mode) == extracted


def test_all_assistant_messages_count_joined_with_newline() -> None:
    output = [_message("Thinking about it."), _message("Paris", role="assistant")]
    result = verify(_request(output, "Paris", extraction_mode="last_line"), StringMatchConfig())
    assert (result.extracted_answer, result.reward) == ("Paris", 1.0)
    output = [_message("\\boxed{Par"), _message("is}")]
    result = verify(_request(output, "Paris", extraction_mode="boxed"), StringMatchConfig())
    assert result.extracted_answer == "Par\nis"


def test_no_assistant_message_scores_zero() -> None:
    for output in ([], [{"type": "reasoning", "id": "rs_1", "summary": []}]):
        result = verify(_request(output, "Paris", extraction_mode="full_response"), StringMatchConfig())
        assert (result.reward, result.extracted_answer) == (0.0, None)


def test_empty_expected_answer_never_scores() -> None:
    result = verify(_request([_message("")], "", extraction_mode="full_response"), StringMatchConfig())
    assert result.reward == 0.0
    result = verify(_request([_message("x")], "", extraction_mode="full_response"), StringMatchConfig())
    assert (result.reward, result.extracted_answer) == (0.0, "x")


def test_missing_expected_answer_is_named() -> None:
    row = dump(_request([_message("Paris")], "Paris"))
    del row["expected_answer"]
    with pytest.raises(ValidationError, match="expected_answer"):
        StringMatchVerifyRequest.model_validate(row)


def test_bad_extraction_mode_is_named_and_extras_ignored() -> None:
    row = {**dump(_request([_message("Paris")], "Paris")), "extraction_mode": "regex"}
    with pytest.raises(ValidationError, match="extraction_mode"):
        StringMatchVerifyRequest.model_validate(row)
    row = {**dump(_request([_message("Paris")], "Paris")), "metadata": {"k": 1}, "uuid": "u"}
    result = verify(StringMatchVerifyRequest.model_validate(row), StringMatchConfig())
    assert set(dump(result)) == {
        "responses_create_params",
        "response",
        "reward",
        "expected_answer",
        "extracted_answer",
    }
