"""Building small rollout files for the analysis tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


def rollout(
    task: int,
    rep: int,
    reward: float = 1.0,
    text: str | None = None,
    out_tokens: int = 50,
    status: str = "completed",
    cap: int | None = None,
    extracted: Any = "A",
    **extra: Any,
) -> dict[str, Any]:
    body = f"answer {task}-{rep}" if text is None else text
    output = (
        [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": body}]}]
        if body
        else []
    )
    response: dict[str, Any] = {
        "id": f"r{task}-{rep}",
        "status": status,
        "output": output,
        "usage": {"input_tokens": 20, "output_tokens": out_tokens, "total_tokens": 20 + out_tokens},
    }
    if status == "incomplete":
        response["incomplete_details"] = {"reason": "max_output_tokens"}
    if cap is not None:
        response["max_output_tokens"] = cap
    row = {
        "_ng_task_index": task,
        "_ng_rollout_index": rep,
        "agent_ref": {"name": "a"},
        "response": response,
        "reward": reward,
        "extracted_answer": extracted,
    }
    row.update(extra)
    return row


def inputs_for(tasks: int, repeats: int) -> list[dict[str, Any]]:
    return [
        {
            "_ng_task_index": t,
            "_ng_rollout_index": r,
            "agent_ref": {"name": "a"},
            "responses_create_params": {"input": "q"},
        }
        for t in range(tasks)
        for r in range(repeats)
    ]


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]
