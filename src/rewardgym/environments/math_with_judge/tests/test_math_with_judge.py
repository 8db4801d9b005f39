"""math_with_judge verify: recorded-rollout compatibility, library vectors, verify paths, bad input.

The judge model is a real HTTP stub server (:mod:`.judge_stub`); math-verify runs in real killable children.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
import yaml
from pydantic import ValidationError

from rewardgym.environments.math_with_judge import metrics
from rewardgym.environments.math_with_judge.judge import (
    JUDGE_SYSTEM_MESSAGE,
    JudgeError,
    judge_user_message,
)
from rewardgym.environments.math_with_judge.library import LibraryVerifier, gold_for_math_verify
from rewardgym.environments.math_with_judge.tests.judge_stub import http_post, judge_reply, running_stub
from rewardgym.environments.math_with_judge.verifier import (
    MathWithJudgeConfig,
    MathWithJudgeVerifyRequest,
    verify,
)
from rewardgym.protocol import dump, output_text

PACKAGE = Path(__file__).resolve().parents[1]
DATA = PACKAGE / "data"
CATALOGUE_KEYS = {"entrypoint", "domain", "verified", "description", "value", "verified_url"}

# Row 1's symbolic comparison needs ~9 s of CPU on the 2-core development machine, more than math-verify's
# own 5 s comparison alarm (kept as in NeMo Gym), so there it scores 0.0; NeMo Gym's faster recording
# machine finished it and scored 1.0. Either way the extracted answer is the same (see README).
MACHINE_DEPENDENT_ROWS = {1}

module_loop = pytest.mark.asyncio(loop_scope="module")
"""Async tests share one event loop so they can share the module's fork helper."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def library() -> AsyncIterator[LibraryVerifier]:
    async with LibraryVerifier(timeout_s=10.0, max_concurrency=4) as shared:
        yield shared


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _prompt(row: dict[str, Any]) -> str:
    content = row["responses_create_params"]["input"][0]["content"]
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


def _config(**overrides: Any) -> MathWithJudgeConfig:
    return MathWithJudgeConfig.model_validate(
        {
            "judge_model_server": {"type": "responses_api_models", "name": "judge_model"},
            "judge_responses_create_params": {"input": [], "temperature": 0.0},
            "should_use_judge": False,
            **overrides,
        }
    )


def _request(text: str | None, expected: str, question: str = "Q?") -> MathWithJudgeVerifyRequest:
    output = (
        []
        if text is None
        else [
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_1",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ]
    )
    return MathWithJudgeVerifyRequest.model_validate(
        {
            "responses_create_params": {"input": [{"role": "user", "content": question}]},
            "response": {"id": "resp_1", "created_at": 0.0, "model": "dummy", "output": output},
            "question": question,
            "expected_answer": expected,
        }
    )


def _recorded_pairs() -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    examples = _lines(DATA / "example.jsonl")
    by_prompt = {_prompt(row): index for index, row in enumerate(examples)}
    pairs = [(by_prompt[_prompt(r)], r) for r in _lines(DATA / "example_rollouts.jsonl")]
    return sorted(((index, examples[index], rollout) for index, rollout in pairs), key=lambda p: p[0])


@module_loop
async def test_compatibility_with_recorded_rollouts(library: LibraryVerifier) -> None:
    pairs = _recorded_pairs()
    assert [index for index, _, _ in pairs] == [0, 1, 2, 3, 4]
    table = ["row | ours reward/library/extracted/evals | NeMo Gym reward/library/extracted/evals"]
    async with running_stub() as stub, aiohttp.ClientSession() as session:
        post = http_post(session, stub.url)
        for index, row, rollout in pairs:
            recorded_evals = rollout["judge_evaluations"] or []
            for evaluation in recorded_evals:
                stub.replies.append((200, evaluation["response"]))
            body = MathWithJudgeVerifyRequest.model_validate({**row, "response": rollout["response"]})
            judge_on = index not in MACHINE_DEPENDENT_ROWS
            result = await verify(body, _config(should_use_judge=judge_on), library=library, judge_post=post)
            evals = result.judge_evaluations or []
            table.append(
                f"{index} | {result.reward}/{result.library_reward}/{result.extracted_answer}/{len(evals)} | "
                f"{rollout['reward']}/{rollout['library_reward']}/{rollout['extracted_answer']}/"
                f"{len(recorded_evals)}"
            )
            assert result.extracted_answer == rollout["extracted_answer"]
            assert result.expected_answer == rollout["expected_answer"]
            assert set(dump(result)) == set(rollout)
            if index in MACHINE_DEPENDENT_ROWS:
                assert result.library_reward in (rollout["library_reward"], 0.0)
                continue
            assert (result.reward, result.library_reward) == (rollout["reward"], rollout["library_reward"])
            assert len(evals) == len(recorded_evals)
            assert stub.replies == []
            for ours, theirs in zip(evals, recorded_evals, strict=True):
                assert dump(ours.response) == theirs["response"]
                sent = ours.responses_create_params.input
                recorded_input = theirs["responses_create_params"]["input"]
                assert not isinstance(sent, str)
                assert dump(sent[0])["content"] == recorded_input[0]["content"] == JUDGE_SYSTEM_MESSAGE
                # The recording judged the whole text; the reference judges the extracted answer.
                generated = output_text(body.response)
                assert recorded_input[1]["content"] == judge_user_message(
                    row["question"], row["expected_answer"], generated
                )
                assert dump(sent[1])["content"] == judge_user_message(
                    row["question"], row["expected_answer"], rollout["extracted_answer"]
                )
    print("\nmath_with_judge compatibility\n" + "\n".join(table))


LIBRARY_VECTORS: list[tuple[str, str, float, str | None]] = [
    ("4", "2 + 2 = \\boxed{4}", 1.0, "4"),
    ("\\boxed{12}", "3 * 4 = \\boxed{12}", 1.0, "12"),
    ("4.0", "2 + 2 = \\boxed{\\frac{8}{2}}", 1.0, "4"),
    ("\\boxed{12}", "3 * 4 = 13", 0.0, "13"),
    ("17.001", "17", 0.0, "17"),
    ("", "", 0.0, None),
    ("3", "3", 1.0, "3"),
    ("x + 1", "$1", 0.0, "1"),
    ("1.4", "Final answer: {7 / 5}", 0.0, "5"),
    ("\\(\\sqrt{2}\\)", "\\boxed{\\sqrt{2}}", 1.0, "sqrt(2)"),
    ("$-3$", "\\boxed{-3}", 1.0, "-3"),
]


@module_loop
async def test_library_vectors(library: LibraryVerifier) -> None:
    for expected, generated, reward, extracted in LIBRARY_VECTORS:
        assert await library.check(expected, generated) == (reward, extracted), (expected, generated)


@pytest.mark.parametrize(
    ("expected", "gold"),
    [
        ("32", "\\boxed{32}"),
        (" \\( \\frac{1}{2} \\) ", "\\boxed{\\frac{1}{2}}"),
        ("$ x $", "\\boxed{x}"),
        ("\\($5$\\)", "\\boxed{5}"),
        ("$", "\\boxed{$}"),
    ],
)
def test_gold_preprocessing(expected: str, gold: str) -> None:
    assert gold_for_math_verify(expected) == gold


@module_loop
async def test_library_pass_skips_the_judge(library: LibraryVerifier) -> None:
    async with running_stub() as stub, aiohttp.ClientSession() as session:
        config = _config(should_use_judge=True)
        result = await verify(
            _request("3 + 5 = \\boxed{8}", "8"),
            config,
            library=library,
            judge_post=http_post(session, stub.url),
        )
        assert (result.reward, result.library_reward, result.judge_evaluations) == (1.0, 1.0, None)
        assert stub.requests == []


@module_loop
async def test_judge_says_different(library: LibraryVerifier) -> None:
    async with running_stub() as stub, aiohttp.ClientSession() as session:
        stub.replies.append((200, judge_reply("My final verdict is different [[A!=B]]")))
        config = _config(should_use_judge=True)
        result = await verify(
            _request("$1", "x + 1"), config, library=library, judge_post=http_post(session, stub.url)
        )
        assert (result.reward, result.library_reward, result.extracted_answer) == (0.0, 0.0, "1")
        assert result.judge_evaluations is not None
        assert len(result.judge_evaluations) == 1
        assert len(stub.requests) == 1
        assert stub.requests[0]["temperature"] == 0.0
        assert stub.requests[0]["input"][1]["content"] == judge_user_message("Q?", "x + 1", "1")


@module_loop
async def test_judge_equal_in_both_orders(library: LibraryVerifier) -> None:
    async with running_stub() as stub, aiohttp.ClientSession() as session:
        stub.replies += [(200, judge_reply("[[A=B]]")), (200, judge_reply("equivalent: [[A=B]]"))]
        config = _config(should_use_judge=True)
        result = await verify(
            _request("Final answer: {7 / 5}", "1.4"),
            config,
            library=library,
            judge_post=http_post(session, stub.url),
        )
        assert (result.reward, result.library_reward, result.extracted_answer) == (1.0, 0.0, "5")
        assert result.judge_evaluations is not None
        assert len(result.judge_evaluations) == 2
        users = [request["input"][1]["content"] for request in stub.requests]
        assert users == [judge_user_message("Q?", "1.4", "5"), judge_user_message("Q?", "5", "1.4")]


@module_loop
async def test_judge_answer_is_the_whole_text_without_extraction(library: LibraryVerifier) -> None:
    async with running_stub() as stub, aiohttp.ClientSession() as session:
        stub.replies.append((200, judge_reply("[[A!=B]]")))
        result = await verify(
            _request("no math here", "7"),
            _config(should_use_judge=True),
            library=library,
            judge_post=http_post(session, stub.url),
        )
        assert result.extracted_answer is None
        assert stub.requests[0]["input"][1]["content"] == judge_user_message("Q?", "7", "no math here")


@module_loop
async def test_judge_http_failure_is_a_judge_error(library: LibraryVerifier) -> None:
    async with running_stub() as stub, aiohttp.ClientSession() as session:
        stub.replies.append((503, {"error": "overloaded"}))
        with pytest.raises(JudgeError, match="503"):
            await verify(
                _request("$1", "x + 1"),
                _config(should_use_judge=True),
                library=library,
                judge_post=http_post(session, stub.url),
            )


@module_loop
async def test_enabled_judge_without_a_wired_call_is_a_judge_error(library: LibraryVerifier) -> None:
    with pytest.raises(JudgeError, match="no judge"):
        await verify(_request("\\boxed{2}", "3"), _config(should_use_judge=True), library=library)


@module_loop
async def test_library_timeout_scores_zero() -> None:
    result = await verify(_request("\\boxed{4}", "4"), _config(library_verifier_timeout_seconds=1e-6))
    assert (result.reward, result.library_reward, result.extracted_answer) == (0.0, 0.0, None)


@module_loop
async def test_no_assistant_message_scores_zero(library: LibraryVerifier) -> None:
    result = await verify(_request(None, "4"), _config(), library=library)
    assert (result.reward, result.library_reward, result.extracted_answer) == (0.0, 0.0, None)
    assert result.judge_evaluations is None


@module_loop
async def test_concurrent_checks_share_a_bounded_verifier() -> None:
    async with LibraryVerifier(timeout_s=10.0, max_concurrency=2) as bounded:
        results = await asyncio.gather(*(bounded.check(str(n), f"\\boxed{{{n}}}") for n in range(6)))
    assert results == [(1.0, str(n)) for n in range(6)]


@pytest.mark.parametrize("missing", ["question", "expected_answer", "response"])
def test_missing_required_field_is_named(missing: str) -> None:
    row = dump(_request("\\boxed{4}", "4"))
    del row[missing]
    with pytest.raises(ValidationError, match=missing):
        MathWithJudgeVerifyRequest.model_validate(row)


def test_config_yaml_block_validates_and_rejects_typos() -> None:
    document = yaml.safe_load((PACKAGE / "configs" / "math_with_judge.yaml").read_text(encoding="utf-8"))
    block = document["math_with_judge"]["resources_servers"]["math_with_judge"]
    config = MathWithJudgeConfig.model_validate({k: v for k, v in block.items() if k not in CATALOGUE_KEYS})
    assert config.should_use_judge is False
    assert config.library_verifier_timeout_seconds == 10.0
    assert config.judge_model_server.name == "policy_model"
    with pytest.raises(ValidationError, match="library_verifier_timeout_seconds"):
        _config(library_verifier_timeout_seconds=0)
    with pytest.raises(ValidationError, match="should_use_jugde"):
        _config(should_use_jugde=True)


def test_metrics_intent() -> None:
    assert metrics.ANSWER_KEY == "extracted_answer"
    assert metrics.score_fn({"reward": 1.0, "library_reward": 0.0, "judge_evaluations": [{}]}) == {
        "symbolic_accuracy": 0.0,
        "judge_accuracy": 1.0,
    }
    assert metrics.score_fn({"reward": 1.0, "library_reward": 1.0, "judge_evaluations": None}) == {
        "symbolic_accuracy": 1.0
    }
