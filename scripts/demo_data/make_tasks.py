"""Write ``tasks.jsonl``, the demo's string_match tasks (run from the repo root; the output is committed).

Each row is a NeMo Gym string_match row: the same two-shot prompt (a system line asking for an
``Answer: <answer>`` line, then two solved examples) followed by one short question, graded with the
environment's default ``final_answer`` extraction. The questions range from ones SmolLM2-135M-Instruct
nearly always answers (capitals of France and Germany, 2 + 3) to ones it nearly never does (17 + 25) so that
a profile of its rollouts spreads over the pass-rate bands. `tests/demo/test_demo_data.py` checks that the
committed file equals this script's output.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SYSTEM = "Answer the question. End your reply with a line of the form 'Answer: <answer>'."
SHOTS = (("What is the capital of Italy?", "Rome"), ("What is 1 + 1?", "2"))
# (question, expected answer); ordered roughly from easy to hard for the 135M model.
QUESTIONS = (
    ("What is the capital of France?", "Paris"),
    ("What is the capital of Germany?", "Berlin"),
    ("What is 2 + 3?", "5"),
    ("Which planet is known as the Red Planet?", "Mars"),
    ("What is the capital of Japan?", "Tokyo"),
    ("What is the chemical formula of water?", "H2O"),
    ("How many legs does a dog have?", "4"),
    ("What is 3 + 4?", "7"),
    ("What is the plural of mouse?", "mice"),
    ("How many sides does a triangle have?", "3"),
    ("How many days are in a week?", "7"),
    ("What is the opposite of up?", "down"),
    ("Repeat this word exactly: banana", "banana"),
    ("What is the largest planet in our solar system?", "Jupiter"),
    ("What do bees make?", "honey"),
    ("What is 9 x 8?", "72"),
    ("What is the capital of Australia?", "Canberra"),
    ("How many continents are there?", "7"),
    ("What gas do plants absorb from the air?", "carbon dioxide"),
    ("What is 5 x 6?", "30"),
    ("What is the capital of Canada?", "Ottawa"),
    ("What is 17 + 25?", "42"),
    ("What is 100 - 37?", "63"),
    ("What is the freezing point of water in degrees Celsius?", "0"),
)


def _message(role: str, text: str) -> dict[str, object]:
    return {"role": role, "content": text}


def rows() -> list[dict[str, object]]:
    """The demo rows, in file order."""
    prefix = [_message("system", SYSTEM)]
    for question, answer in SHOTS:
        prefix += [_message("user", question), _message("assistant", f"Answer: {answer}")]
    return [
        {
            "responses_create_params": {"input": [*prefix, _message("user", question)]},
            "expected_answer": answer,
            "extraction_mode": "final_answer",
        }
        for question, answer in QUESTIONS
    ]


def render() -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows())


if __name__ == "__main__":
    target = Path(__file__).with_name("tasks.jsonl")
    target.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {len(QUESTIONS)} rows to {target}\n")
