"""Request builders of the code_gen tests."""

from __future__ import annotations

import os
from typing import Any

from rewardgym.environments.code_gen.verifier import CodeGenVerifyRequest


def make_request(
    text: str | None,
    inputs: list[str],
    outputs: list[str],
    fn_name: str | None = None,
    *,
    reasoning: list[str] | None = None,
    difficulty: str | None = None,
) -> CodeGenVerifyRequest:
    """A verify request whose response holds ``reasoning`` summaries then one assistant message ``text``."""
    output: list[dict[str, Any]] = []
    if reasoning is not None:
        summary = [{"type": "summary_text", "text": part} for part in reasoning]
        output.append({"type": "reasoning", "id": "rs", "summary": summary})
    if text is not None:
        output.append(
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
        )
    metadata: dict[str, Any] = {"unit_tests": {"inputs": inputs, "outputs": outputs, "fn_name": fn_name}}
    if difficulty is not None:
        metadata["difficulty"] = difficulty
    return CodeGenVerifyRequest.model_validate(
        {
            "responses_create_params": {"input": "solve it"},
            "response": {"id": "r", "created_at": 0.0, "model": "m", "output": output},
            "verifier_metadata": metadata,
        }
    )


def fenced(code: str) -> str:
    """A model answer with ``code`` in a python fence."""
    return f"Here is my solution.\n```python\n{code}\n```\nDone."


def worker_uid_base(base: int) -> int:
    """``base`` moved apart per pytest-xdist worker, so the uid-range checks of one worker's tests never see
    another worker's sandboxes (the host-wide uid claims keep real servers apart anyway)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    return base + 300 * (int(worker) if worker.isdigit() else 0)
