"""mcqa verifier: NeMo Gym compatibility on the recorded rollouts, the reference test vectors, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rewardgym.environments.mcqa import metrics
from rewardgym.environments.mcqa.verifier import (
    GradingMode,
    MCQAConfig,
    MCQAVerifyRequest,
    MCQAVerifyResponse,
    verify,
)
from rewardgym.errors import DataError
from rewardgym.protocol import ReverifyMode, dump

DATA = Path(__file__).resolve().parents[1] / "data"
Opts = list[dict[str, str | None]]
ABCD: Opts = [{"A": "optA"}, {"B": "optB"}, {"C": "optC"}, {"D": "optD"}]
A_TO_J: Opts = [{letter: f"opt{letter}"} for letter in "ABCDEFGHIJ"]
PCR: Opts = [
    {"A": "Karyotyping"},
    {"B": "Polymerase Chain Reaction (PCR)"},
    {"C": "PCR"},
    {"D": "FISH"},
]

# Rows whose recorded result predates the current NeMo Gym rules (see README "Known differences").
# Row 1 boxes "C: An individual ..." (a letter label): the recording's older strict regex accepted only a
# box holding a lone letter; the reference rule (^\s*([A-Z])\s*[:).\-]) reads C, which is the gold.
KNOWN_DIFFERENCES: dict[int, tuple[float, str | None]] = {1: (1.0, "C")}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _prompt(row: dict[str, Any]) -> str:
    content = row["responses_create_params"]["input"][0]["content"]
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


def _response(*texts: str) -> dict[str, Any]:
    output = [
        {
            "id": f"msg_{i}",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        for i, text in enumerate(texts)
    ]
    return {"id": "resp_test", "created_at": 0.0, "model": "dummy", "object": "response", "output": output}


def _request(
    text: str | None,
    expected: str | None,
    *,
    options: Opts | None = None,
    grading_mode: str = "strict_single_letter_boxed",
    template: dict[str, Any] | None = None,
) -> MCQAVerifyRequest:
    row: dict[str, Any] = {
        "responses_create_params": {"input": [{"role": "user", "content": "Q?"}]},
        "response": _response() if text is None else _response(text),
        "options": ABCD if options is None else options,
        "expected_answer": expected,
        "grading_mode": grading_mode,
    }
    if template is not None:
        row["template_metadata"] = template
    return MCQAVerifyRequest.model_validate(row)


def _compat_rows() -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    examples = _lines(DATA / "example.jsonl")
    by_prompt = {_prompt(row): index for index, row in enumerate(examples)}
    pairs = []
    for rollout in _lines(DATA / "example_rollouts.jsonl"):
        index = by_prompt[_prompt(rollout)]
        pairs.append((index, examples[index], rollout))
    return sorted(pairs, key=lambda pair: pair[0])


def test_compatibility_with_recorded_rollouts() -> None:
    pairs = _compat_rows()
    assert [index for index, _, _ in pairs] == [0, 1, 2, 3, 4]
    table = ["row | ours reward/extracted | NeMo Gym reward/extracted"]
    for index, row, rollout in pairs:
        body = MCQAVerifyRequest.model_validate({**row, "response": rollout["response"]})
        result = verify(body, MCQAConfig())
        table.append(
            f"{index} | {result.reward} / {result.extracted_answer} | "
            f"{rollout['reward']} / {rollout['extracted_answer']}"
        )
        assert result.expected_answer == rollout["expected_answer"]
        recorded = (float(rollout["reward"]), rollout["extracted_answer"])
        expected = KNOWN_DIFFERENCES.get(index, recorded)
        assert (result.reward, result.extracted_answer) == expected
        assert set(dump(result)) == set(rollout) - {"_ng_task_index", "_ng_rollout_index", "agent_ref"}
    print("\nmcqa compatibility\n" + "\n".join(table))


STRICT = "strict_single_letter_boxed"
LENIENT_BOXED = "lenient_boxed"
COLON = "lenient_answer_colon"

ROW_MODE_VECTORS: list[tuple[str, Opts, str, str, str | None]] = [
    (STRICT, ABCD, "The answer is C.", "C", None),
    (STRICT, ABCD, "Final: \\boxed{ [C] }", "C", "C"),
    (LENIENT_BOXED, ABCD, "Final: \\boxed{ optC }", "C", "C"),
    (COLON, ABCD, "Answer: c", "C", "C"),
    (COLON, ABCD, "Answer: optC", "C", "C"),
    (STRICT, A_TO_J, "\\boxed{\\text{I: NGS can detect both coding and non-coding regions}}", "I", "I"),
    (
        STRICT,
        A_TO_J,
        "\\[ \\boxed{E: \\text{A polygenic risk score can provide a probability}} \\]",
        "E",
        "E",
    ),
    (STRICT, A_TO_J, "\\boxed{A polygenic risk score can provide a probability.}", "A", None),
    (STRICT, ABCD, "\\boxed{B", "B", None),
    (STRICT, A_TO_J, "Candidate is \\boxed{C}, but on reflection the answer is \\boxed{E}", "E", "E"),
    (STRICT, A_TO_J, "Thinking: \\boxed{\\text{some idea}}. Final answer: \\boxed{E}", "E", "E"),
    (STRICT, ABCD, "\\boxed{c}", "C", None),
    # Derived from the rules (docs/reference/environments.md §3, options A-D = Karyotyping, PCR long/short,
    # FISH).
    (STRICT, PCR, "\\boxed{(B)}", "B", "B"),
    (STRICT, PCR, "\\boxed{B. PCR}", "B", "B"),
    (STRICT, PCR, "\\boxed{\\textbf{B}}", "B", None),
    (STRICT, PCR, "\\boxed{B and C}", "B", None),
    (LENIENT_BOXED, PCR, "\\boxed{Polymerase Chain Reaction (PCR)}", "B", None),
    (LENIENT_BOXED, PCR, "\\boxed{karyotyping}", "A", "A"),
]


@pytest.mark.parametrize(("mode", "options", "text", "gold", "extracted"), ROW_MODE_VECTORS)
def test_row_grading_modes(mode: str, options: Opts, text: str, gold: str, extracted: str | None) -> None:
    result = verify(_request(text, gold, options=options, grading_mode=mode), MCQAConfig())
    assert result.extracted_answer == extracted
    assert result.reward == (1.0 if extracted == gold else 0.0)


TEMPLATE_VECTORS: list[tuple[str | list[str], Opts, str, str]] = [
    ("Option Selected:\\s*([A-Za-z])", ABCD, "Option Selected: B", "B"),
    ("ANSWER IS\\s*([A-Za-z])", ABCD, "ANSWER IS b", "B"),
    (["Answer\\s*:\\s*([A-Za-z])", "Antwort\\s*:\\s*([A-Za-z])"], ABCD, "Antwort: B", "B"),
    ("الإجابة:\\s*([أ-د])", ABCD, "الإجابة: ب", "B"),
    ("Answer:\\s*([A-Za-z])", ABCD, "Maybe Answer: A? Let me reconsider. Final Answer: B", "B"),
    ("([", ABCD, "\\boxed{B}", "B"),
    ("Selected:\\s*([A-Za-z])", [], "Selected: B", "B"),
    ("Pick:\\s*(.+)", ABCD, "Pick: OPTD", "D"),
    ("Pick:\\s*(.+)", ABCD, "Pick: Ｃ", "C"),
    ("Pick:\\s*(.+)", ABCD, "Pick: ঢ", "D"),
]


@pytest.mark.parametrize(("pattern", "options", "text", "gold"), TEMPLATE_VECTORS)
def test_template_output_regex(pattern: str | list[str], options: Opts, text: str, gold: str) -> None:
    body = _request(text, gold, options=options, template={"output_regex": pattern, "template_id": "t1"})
    result = verify(body, MCQAConfig())
    assert (result.extracted_answer, result.reward) == (gold, 1.0)


def test_template_letter_is_not_checked_against_options() -> None:
    body = _request("Option Selected: Z", "Z", template={"output_regex": "Option Selected:\\s*([A-Za-z])"})
    assert verify(body, MCQAConfig()).extracted_answer == "Z"


def test_template_without_hit_falls_back_to_the_mode() -> None:
    body = _request("\\boxed{D}", "D", template={"output_regex": "Option Selected:\\s*([A-Za-z])"})
    assert verify(body, MCQAConfig()).extracted_answer == "D"


def test_template_with_two_groups_is_a_data_error() -> None:
    body = _request("Answer: B", "B", template={"output_regex": "(Answer):\\s*([A-Z])"})
    with pytest.raises(DataError, match=r"template_metadata\.output_regex"):
        verify(body, MCQAConfig())


def test_config_mode_overrides_row_mode() -> None:
    text = "I think the answer is B.\n\nAnswer: B"
    body = _request(text, "B", grading_mode=STRICT)
    assert verify(body, MCQAConfig(grading_mode=COLON)).extracted_answer == "B"
    assert verify(body, MCQAConfig(grading_mode=COLON)).reward == 1.0
    assert verify(body, MCQAConfig()).extracted_answer is None
    assert verify(body, MCQAConfig()).reward == 0.0


MD_VECTORS: list[tuple[Opts, str, str | None]] = [
    (ABCD, "The answer is B.\n\nAnswer: B", "B"),
    (ABCD, "Reasoning here.\n\n**Answer: C**", "C"),
    (ABCD, "__Answer__: A", "A"),
    (ABCD, "Answer: B because C is not valid", "B"),
    (ABCD, "Answer: B/B", "B"),
    (ABCD, "Answer: $D$", "D"),
    (ABCD, "Answer: (D)", "D"),
    (A_TO_J, "\\boxed{\\text{Answer: G}}", "G"),
    (ABCD, "I think it might be B but I'm not sure", None),
    (ABCD, "Answer: A/B/C", None),
    (ABCD, "Answer: A or B", None),
    (ABCD, "Answer: A and B", None),
    (ABCD, "Answer: A, B", None),
    (A_TO_J, "**Answer: D/H**", None),
    (ABCD, "Answer: A\nAnswer: B", "B"),
    (ABCD, "Answer: B\nAnswer: unknown", "B"),
    (ABCD, "Answer: B\nAnswer: G", "B"),
    (ABCD, "Answer: B\nAnswer: A/B/C", "B"),
    (ABCD, "Answer: G", None),
    (ABCD, "Answer: unknown", None),
    (ABCD, "Answer: ب", "B"),
]


@pytest.mark.parametrize(("options", "text", "extracted"), MD_VECTORS)
def test_config_answer_colon_md(options: Opts, text: str, extracted: str | None) -> None:
    gold = extracted or "A"
    result = verify(_request(text, gold, options=options), MCQAConfig(grading_mode="lenient_answer_colon_md"))
    assert result.extracted_answer == extracted
    assert result.reward == (1.0 if extracted is not None else 0.0)


def test_answer_colon_ignores_markdown_bold() -> None:
    result = verify(_request("**Answer: C**", "C"), MCQAConfig(grading_mode=COLON))
    assert (result.extracted_answer, result.reward) == (None, 0.0)


def test_answer_colon_takes_the_first_hit() -> None:
    result = verify(_request("Answer: A\nAnswer: B", "B", grading_mode=COLON), MCQAConfig())
    assert result.extracted_answer == "A"
    assert result.reward == 0.0


def test_null_option_letters_are_not_allowed() -> None:
    options: Opts = [{"A": "x"}, {"B": None}]
    result = verify(_request("\\boxed{B}", "B", options=options), MCQAConfig())
    assert result.extracted_answer is None


def test_gold_is_normalised_and_missing_gold_never_scores() -> None:
    assert verify(_request("\\boxed{B}", "  b "), MCQAConfig()).expected_answer == "B"
    assert verify(_request("\\boxed{B}", "  b "), MCQAConfig()).reward == 1.0
    result = verify(_request("\\boxed{B}", None), MCQAConfig())
    assert (result.expected_answer, result.extracted_answer, result.reward) == ("", "B", 0.0)


def test_no_assistant_message_scores_zero() -> None:
    result = verify(_request(None, "B"), MCQAConfig())
    assert (result.reward, result.extracted_answer) == (0.0, None)
    reasoning_only = MCQAVerifyRequest.model_validate(
        {
            **dump(_request(None, "B")),
            "response": {**_response(), "output": [{"type": "reasoning", "id": "rs_1", "summary": []}]},
        }
    )
    assert verify(reasoning_only, MCQAConfig()).reward == 0.0


def test_all_assistant_messages_are_concatenated() -> None:
    body = MCQAVerifyRequest.model_validate(
        {**dump(_request(None, "B")), "response": _response("\\boxed{", "B}")}
    )
    assert verify(body, MCQAConfig()).extracted_answer == "B"


@pytest.mark.parametrize("missing", ["responses_create_params", "response"])
def test_missing_required_field_is_named(missing: str) -> None:
    row = dump(_request("\\boxed{B}", "B"))
    del row[missing]
    with pytest.raises(ValidationError, match=missing):
        MCQAVerifyRequest.model_validate(row)


def test_unknown_grading_mode_is_rejected_and_undeclared_fields_ignored() -> None:
    row = {**dump(_request("\\boxed{B}", "B")), "grading_mode": "lenient_answer_colon_md"}
    with pytest.raises(ValidationError, match="grading_mode"):
        MCQAVerifyRequest.model_validate(row)
    row = {**dump(_request("\\boxed{B}", "B")), "some_extra": 1}
    body = MCQAVerifyRequest.model_validate(row)
    assert "some_extra" not in dump(body)
    result: MCQAVerifyResponse = verify(body, MCQAConfig())
    assert set(dump(result)) == {
        "responses_create_params",
        "response",
        "reward",
        "expected_answer",
        "extracted_answer",
    }


def test_config_rejects_unknown_mode_and_is_stateless() -> None:
    mode: GradingMode = "lenient_answer_colon_md"
    assert MCQAConfig(grading_mode=mode).grading_mode == mode
    with pytest.raises(ValidationError, match="grading_mode"):
        MCQAConfig.model_validate({"grading_mode": "fuzzy"})
    assert MCQAConfig.REVERIFY_MODE is ReverifyMode.STATELESS
    with pytest.raises(ValidationError, match="grading_mod\n"):
        MCQAConfig.model_validate({"grading_mod": "lenient_boxed"})


def test_metrics_intent() -> None:
    assert metrics.ANSWER_KEY == "extracted_answer"
    assert metrics.score_fn({"reward": 1.0, "extracted_answer": "B"}) == {"accuracy": 1.0}
    assert metrics.score_fn({"reward": False}) == {"accuracy": 0.0}
    assert metrics.KEY_METRICS_FIRST == ("mean/reward",)
    assert metrics.KEY_METRICS_LAST == ("pass@1/accuracy",)
