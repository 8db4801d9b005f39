"""equivalence_rule verifier: NeMo Gym compatibility on recorded rollouts, reference vectors, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rewardgym.environments.equivalence_rule.verifier import (
    EquivalenceRuleConfig,
    EquivalenceRuleVerifyRequest,
    GradingRule,
    score,
    verify,
)
from rewardgym.protocol import dump

DATA = Path(__file__).resolve().parents[1] / "data"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _prompt(row: dict[str, Any]) -> str:
    content = row["responses_create_params"]["input"][0]["content"]
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


def _request(texts: list[str], expected: str, **extras: Any) -> EquivalenceRuleVerifyRequest:
    output = [
        {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{i}",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        for i, text in enumerate(texts)
    ]
    return EquivalenceRuleVerifyRequest.model_validate(
        {
            "responses_create_params": {"input": [{"role": "user", "content": "Q?"}]},
            "response": {"id": "resp_1", "created_at": 0.0, "model": "dummy", "output": output},
            "expected_answer": expected,
            **extras,
        }
    )


def test_compatibility_with_recorded_rollouts() -> None:
    examples = _lines(DATA / "example.jsonl")
    by_prompt = {_prompt(row): index for index, row in enumerate(examples)}
    table = ["row | ours reward (seq_match) | NeMo Gym reward"]
    seen = []
    for rollout in _lines(DATA / "example_rollouts.jsonl"):
        index = by_prompt[_prompt(rollout)]
        seen.append(index)
        body = EquivalenceRuleVerifyRequest.model_validate(
            {**examples[index], "response": rollout["response"]}
        )
        result = verify(body, EquivalenceRuleConfig())
        assert result.reward == rollout["reward"]
        assert result.equivalence_score == rollout["equivalence_score"]
        row = dump(result)
        assert set(row) == set(rollout)
        for key in (
            "expected_answer",
            "question",
            "dataset",
            "source",
            "hashid",
            "context_length",
            "agent_ref",
        ):
            assert row[key] == rollout[key]
        seq = verify(body, EquivalenceRuleConfig(grading_rule="seq_match")).reward
        table.append(f"{index} | {result.reward} ({seq:.3f}) | {rollout['reward']}")
    assert sorted(seen) == [0, 1, 2, 3, 4]
    print("\nequivalence_rule compatibility (rule exact)\n" + "\n".join(table))


SCORE_VECTORS: list[tuple[GradingRule, str, str, float]] = [
    ("exact", "Paris", "Paris", 1.0),
    ("exact", "paris", "Paris", 1.0),
    ("exact", "  Paris  ", "Paris", 1.0),
    ("exact", "London", "Paris", 0.0),
    ("exact", "Par", "Paris", 0.0),
    ("exact", "", "", 1.0),
    ("exact", "a \n\t b", "A B", 1.0),
    ("seq_match", "Hello", "hello", 1.0),
    ("seq_match", "hello world", "hello", 0.625),
    ("weighted_seq_match", "hello", "hello", 1.0),
]


@pytest.mark.parametrize(("rule", "response", "answer", "expected"), SCORE_VECTORS)
def test_score_vectors(rule: GradingRule, response: str, answer: str, expected: float) -> None:
    assert score(response, answer, rule) == pytest.approx(expected, abs=1e-12)


def test_weighted_rewards_a_correct_prefix() -> None:
    seq = score("abcdefghij diff", "abcdefghij tail", "seq_match")
    weighted = score("abcdefghij diff", "abcdefghij tail", "weighted_seq_match")
    assert seq == pytest.approx(0.8)
    assert weighted >= seq
    assert weighted == pytest.approx(0.83)
    assert score("xyz", "abc", "weighted_seq_match") < 0.5


def test_text_concatenates_messages_without_separator() -> None:
    result = verify(_request(["Par", "is"], "Paris"), EquivalenceRuleConfig())
    assert result.reward == 1.0


def test_no_assistant_message_scores_zero() -> None:
    result = verify(_request([], "Paris"), EquivalenceRuleConfig())
    assert (result.reward, result.equivalence_score) == (0.0, 0.0)


def test_extras_are_echoed_and_computed_fields_win() -> None:
    body = _request(["6"], "6", hashid="h1", context_length="1562", reward=-5.0, equivalence_score=-5.0)
    row = dump(verify(body, EquivalenceRuleConfig()))
    assert row["hashid"] == "h1"
    assert row["context_length"] == "1562"
    assert (row["reward"], row["equivalence_score"]) == (1.0, 1.0)


def test_missing_expected_answer_is_named() -> None:
    row = dump(_request(["x"], "x"))
    del row["expected_answer"]
    with pytest.raises(ValidationError, match="expected_answer"):
        EquivalenceRuleVerifyRequest.model_validate(row)


def test_config_rejects_unknown_rule() -> None:
    with pytest.raises(ValidationError, match="grading_rule"):
        EquivalenceRuleConfig.model_validate({"grading_rule": "fuzzy"})
    assert EquivalenceRuleConfig().grading_rule == "exact"
    with pytest.raises(ValidationError, match="grading_rul\n"):
        EquivalenceRuleConfig.model_validate({"grading_rul": "exact"})
