"""/aggregate_metrics statistics are the profiler's own (docs/reference/contract.md §4.6)."""

from __future__ import annotations

import pytest

from rewardgym.metrics.aggregate_metrics import compute_aggregate_metrics, profiler_profile
from rewardgym.profile import profile_rows


def _rows() -> list[dict[str, object]]:
    rewards = {(0, 0): 1.0, (0, 1): 0.0, (1, 0): 1.0, (1, 1): 1.0, (2, 0): 0.0, (2, 1): 1.0}
    return [
        {
            "_ng_task_index": t,
            "_ng_rollout_index": r,
            "reward": v,
            "flag": bool(v),
            "response": {"usage": {"input_tokens": 10 * t}},
        }
        for (t, r), v in rewards.items()
    ]


def test_agent_metrics_equal_the_profilers_agent_entry() -> None:
    rows = _rows()
    metrics = compute_aggregate_metrics(rows, profile=profiler_profile)
    inputs = [{"_ng_task_index": r["_ng_task_index"], "_ng_rollout_index": r["_ng_rollout_index"],
               "agent_ref": {"name": "agent"}} for r in rows]  # fmt: skip
    expected = dict(profile_rows(inputs, rows).agent_metrics[0])
    expected.pop("agent_ref")
    assert metrics.agent_metrics["mean/reward"] == pytest.approx(4 / 6)
    assert metrics.agent_metrics["std/reward"] == pytest.approx(expected["std/reward"])
    assert "mean_across_repeats/mean/reward" in metrics.agent_metrics  # NeMo Gym 0.7.0 aggregates
    for key, value in expected.items():
        assert metrics.agent_metrics[key] == pytest.approx(value), key


def test_group_rows_are_the_per_task_profile_rows() -> None:
    metrics = compute_aggregate_metrics(_rows(), profile=profiler_profile)
    assert [g["_ng_task_index"] for g in metrics.group_level_metrics] == [0, 1, 2]
    first = metrics.group_level_metrics[0]
    assert first["mean/reward"] == 0.5
    assert first["num_rollouts"] == 2
    assert [i["rollout_id"] for i in first["rollout_infos"]] == ["0:0", "0:1"]
