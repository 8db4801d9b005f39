"""The `make demo` tasks (scripts/demo_data/tasks.jsonl) are what README and make_tasks.py say they are.

The pass rates themselves come from the embedded model and are not asserted here; this checks the data:
the committed file is the generator's output, every row is a valid string_match row graded with the
default ``final_answer`` extraction, a reply in the requested ``Answer: …`` form of the expected answer
scores 1.0, a wrong one 0.0, one without an ``Answer:`` line has no extractable answer, and copying the
two worked examples' answers scores on no task.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rewardgym.environments.string_match.verifier import (
    StringMatchConfig,
    StringMatchVerifyRequest,
    verify,
)

REPO = Path(__file__).resolve().parents[2]
DEMO_DATA = REPO / "scripts" / "demo_data"
TASKS = DEMO_DATA / "tasks.jsonl"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_tasks", DEMO_DATA / "make_tasks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in TASKS.read_text(encoding="utf-8").splitlines()]


def _verify(row: dict[str, Any], reply: str) -> tuple[float, str | None]:
    message = {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": reply, "annotations": []}],
    }
    response = {"id": "resp_1", "created_at": 0.0, "model": "demo", "output": [message]}
    body = StringMatchVerifyRequest.model_validate({**row, "response": response})
    result = verify(body, StringMatchConfig())
    return result.reward, result.extracted_answer


def test_committed_file_is_the_generators_output() -> None:
    assert TASKS.read_text(encoding="utf-8") == _generator().render()


def test_rows_share_the_two_shot_prompt_and_ask_distinct_questions() -> None:
    rows = _rows()
    assert len(rows) == 24
    prompts = [row["responses_create_params"]["input"] for row in rows]
    prefix = prompts[0][:-1]
    assert [m["role"] for m in prefix] == ["system", "user", "assistant", "user", "assistant"]
    assert "Answer: <answer>" in prefix[0]["content"]
    for messages in prompts:
        assert messages[:-1] == prefix
        assert messages[-1]["role"] == "user"
    assert len({messages[-1]["content"] for messages in prompts}) == len(rows)
    assert all(row["extraction_mode"] == "final_answer" for row in rows)


@pytest.mark.parametrize("index", range(24))
def test_each_task_is_graded_as_documented(index: int) -> None:
    row = _rows()[index]
    expected = row["expected_answer"]
    assert _verify(row, f"Answer: {expected}") == (1.0, expected)
    assert _verify(row, f"Let me think.\nAnswer: {expected.upper()}.")[0] == 1.0  # case, trailing period
    assert _verify(row, "Answer: 12345 zebras") == (0.0, "12345 zebras")
    # The model's most common non-answer: a sentence without an "Answer:" line reads as no answer.
    assert _verify(row, f"The answer to this question is {expected}") == (0.0, None)
    # Copying a worked example's answer never scores.
    for _, shown in _generator().SHOTS:
        assert _verify(row, f"Answer: {shown}")[0] == 0.0
