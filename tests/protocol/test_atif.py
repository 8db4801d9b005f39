"""Rollouts as ATIF trajectories and back (rewardgym.protocol.atif), on NeMo Gym's recorded rollouts."""

from __future__ import annotations

from typing import Any

import orjson

from rewardgym.protocol import atif
from tests.conftest import EXAMPLES


def _items(response: Any, kind: str) -> list[Any]:
    return [item for item in response["output"] if item.get("type") == kind]


def test_tool_calls_and_their_outputs_become_steps_and_come_back() -> None:
    row = orjson.loads(
        (EXAMPLES / "example_single_tool_call" / "example_rollouts.jsonl").read_bytes().splitlines()[0]
    )
    row = {**row, "_ng_task_index": 3, "_ng_rollout_index": 1}  # NeMo Gym's example rows carry no keys
    trajectory = atif.trajectory_of(row)
    assert atif.is_trajectory(trajectory) and trajectory["schema_version"] == "ATIF-v1.4"
    steps = trajectory["steps"]
    assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
    assert all(s["is_copied_context"] for s in steps if s["source"] in ("user", "system"))
    calls = [c for s in steps for c in s.get("tool_calls", [])]
    results = [r for s in steps for r in s.get("observation", {}).get("results", [])]
    original = row["response"]
    assert [c["function_name"] for c in calls] == [i["name"] for i in _items(original, "function_call")]
    assert [r["source_call_id"] for r in results] == [
        i["call_id"] for i in _items(original, "function_call_output")
    ]
    back = atif.response_of(trajectory)
    for kind, field in (("function_call", "arguments"), ("function_call_output", "output")):
        assert [i[field] for i in _items(back, kind)] == [i[field] for i in _items(original, kind)]
    texts = [
        c["text"] for i in _items(original, "message") for c in i["content"] if c.get("type") == "output_text"
    ]
    assert [i["content"][0]["text"] for i in _items(back, "message")] == texts
    assert back["usage"]["input_tokens"] == original["usage"]["input_tokens"]
    assert atif.key_of_trajectory(trajectory, "x") == (
        row.get("_ng_task_index"),
        row.get("_ng_rollout_index"),
    )
