"""The aggregate metrics' groups gathered from the stream equal those read back from the written file."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from rewardgym.collect.aggregate import StreamedGroups, group_by_agent
from rewardgym.collect.outputs import stored_line
from rewardgym.config import secrets
from rewardgym.io.jsonl import JsonlAppender


def _row(rng: random.Random, task: int, rollout: int) -> dict[str, Any]:
    agent = rng.choice(["b_agent", "a_agent"])
    text = rng.choice(["plain", "leaks sk-test-SECRET-1234 here"])
    return {
        "_ng_task_index": task,
        "_ng_rollout_index": rollout,
        "agent_ref": {"name": agent},
        "responses_create_params": {"input": text},
        "response": {"output": [{"type": "message", "content": text}], "usage": {"input_tokens": task}},
        "reward": rng.choice([0.0, 1.0, 0.5]),
        "metadata": {"note": text, "x": rng.random()},
    }


def test_streamed_groups_equal_the_file_read_back(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(secrets, "_needles", [()])  # this test's registry only
    secrets.register_secret("sk-test-SECRET-1234")
    rng = random.Random(7)
    keys = [(t, r) for t in range(40) for r in range(3)]
    rng.shuffle(keys)  # completion order
    path = tmp_path / "rollouts.jsonl"
    appender = JsonlAppender(path, encode=stored_line)
    streamed = StreamedGroups()
    for task, rollout in keys:
        row = _row(rng, task, rollout)
        appender.write(row)
        streamed.add(row)
    appender.close()
    read_back = group_by_agent([path])
    assert streamed.groups() == read_back
    assert any("sk-test" not in str(r) and "***" in str(r) for r in read_back["a_agent"])
