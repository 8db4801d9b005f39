"""Request builders and process probes of the code_gen tests."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import psutil

from rewardgym.environments.code_gen.verifier import CodeGenConfig, CodeGenVerifyRequest


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


def uid_processes(config: CodeGenConfig) -> list[psutil.Process]:
    """The live processes of the sandbox uids ``config`` may use (none without a uid base)."""
    if config.sandbox_uid_base is None:
        return []
    uids = range(config.sandbox_uid_base, config.sandbox_uid_base + config.max_concurrent_executions)
    found = []
    for proc in psutil.process_iter(["uids"]):
        uids_info = proc.info["uids"]
        if uids_info is not None and uids_info.real in uids:
            found.append(proc)
    return found


async def no_sandbox_processes_left(config: CodeGenConfig, within: float = 5.0) -> bool:
    """Whether every sandbox process is gone within ``within`` seconds (polled: they are other processes)."""
    deadline = time.monotonic() + within
    while uid_processes(config):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True
