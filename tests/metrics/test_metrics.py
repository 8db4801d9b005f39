"""pass@k, majority@k and the statistics baseline (pure functions)."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardgym.metrics.aggregate_metrics import basic_profile, compute_aggregate_metrics, group_by_task
from rewardgym.metrics.key_metrics import highest_k_metrics
from rewardgym.metrics.pass_at_k import pass_majority_metrics


def rows(rewards: list[float], answers: list[Any] | None = None) -> list[dict[str, Any]]:
    answers = answers or [None] * len(rewards)
    return [{"reward": r, "extracted_answer": a} for r, a in zip(rewards, answers, strict=True)]


def brute_pass_at_k(values: list[int], k: int) -> float:
    subsets = list(itertools.combinations(values, k))
    return sum(1.0 for s in subsets if any(s)) / len(subsets)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.lists(st.lists(st.integers(0, 1), min_size=n, max_size=n),
                                                     min_size=1, max_size=5)))  # fmt: skip
def test_pass_at_k_is_the_unbiased_estimator(tasks: list[list[int]]) -> None:
    metrics, _ = pass_majority_metrics([rows([float(v) for v in t]) for t in tasks])
    for k in range(1, max(len(t) for t in tasks) + 1):
        eligible = [t for t in tasks if len(t) >= k]
        expected = 100 * statistics.fmean(brute_pass_at_k(t, k) for t in eligible)
        assert math.isclose(metrics[f"pass@{k}/accuracy"], expected, abs_tol=1e-9)
        avg = 100 * statistics.fmean(statistics.fmean(t[:k]) for t in eligible)
        assert math.isclose(metrics[f"pass@1[avg-of-{k}]/accuracy"], avg, abs_tol=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 1), min_size=1, max_size=6), min_size=2, max_size=6))
def test_unequal_repeats_count_every_task_at_every_k_and_grow_with_k(tasks: list[list[int]]) -> None:
    if len({len(t) for t in tasks}) == 1:
        tasks = [*tasks, [1] * (len(tasks[0]) + 1)]  # make the repeats unequal
    metrics, _ = pass_majority_metrics([rows([float(v) for v in t]) for t in tasks])
    top = max(len(t) for t in tasks)
    values = [metrics[f"pass@{k}/accuracy"] for k in range(1, top + 1)]
    assert all(0 <= v <= 100 for v in values)
    assert all(b >= a - 1e-9 for a, b in itertools.pairwise(values))
    for k in range(1, top + 1):
        observed = metrics[f"pass@{k}/accuracy/tasks_with_k_rollouts"]
        assert observed == sum(1 for t in tasks if len(t) >= k)
        # pass@1 and every avg-of-k are the same number: the mean pass probability
        assert math.isclose(metrics[f"pass@1[avg-of-{k}]/accuracy"], values[0], rel_tol=1e-12)
    # the tasks-behind-it counts are not headline metrics
    assert not any(key.endswith("tasks_with_k_rollouts") for key in highest_k_metrics(metrics, "pass@{k}"))


def test_unequal_repeats_of_an_adaptive_run_match_the_truth() -> None:
    import numpy as np

    from rewardgym.stats.adaptive import AdaptivePolicy
    from rewardgym.stats.simulate import POOLS, adaptive_run

    rng = np.random.default_rng(3)
    p = POOLS["balanced"].draw(rng, 1500)
    outcomes = rng.random((1500, 16)) < p[:, None]
    n = adaptive_run(p, AdaptivePolicy(), rng, outcomes).blocks.n
    metrics, _ = pass_majority_metrics([rows([float(x) for x in outcomes[t, : n[t]]]) for t in range(1500)])
    for k in (1, 4, 16):
        truth = 100 * float(np.mean(1 - (1 - p) ** k))
        # per task 1 − (1 − p)^k has sd ≤ 0.5: 3 standard errors over 1500 tasks ≈ 3.9 points
        assert metrics[f"pass@{k}/accuracy"] == pytest.approx(truth, abs=2.0)
    # the old rule (tasks with >= 16 rollouts only) read far below the truth here
    assert metrics["pass@16/accuracy/tasks_with_k_rollouts"] < 1500


def test_non_binary_scores_use_max_of_first_k() -> None:
    metrics, _ = pass_majority_metrics([rows([0.2, 0.9, 0.5])])
    assert math.isclose(metrics["pass@1/accuracy"], 20.0)
    assert math.isclose(metrics["pass@2/accuracy"], 90.0)
    assert math.isclose(metrics["pass@3/accuracy"], 90.0)


def test_majority_and_no_answer() -> None:
    tasks = [
        rows([1, 0, 1], ["B", "C", "B"]),  # majority B → 1
        rows([0, 0, 1], ["C", "C", "B"]),  # majority C → 0
        rows([0, 0, 0], [None, None, None]),  # no answer → 0
    ]
    metrics, per_sample = pass_majority_metrics(tasks, answer_key="extracted_answer")
    assert math.isclose(metrics["majority@3/accuracy"], 100 / 3)
    # k=2: task 1 has a tie (B:1, C:0) → average 0.5; task 2 majority C → 0
    assert math.isclose(metrics["majority@2/accuracy"], 100 * 0.5 / 3)
    assert math.isclose(metrics["pass@1/no_answer"], 100 / 3)
    assert per_sample["accuracy"] == pytest.approx([100 / 3, 0.0, 200 / 3])
    std = statistics.stdev(per_sample["accuracy"][:3])
    assert math.isclose(metrics["pass@1[avg-of-3]/accuracy/std_dev_across_runs"], std)
    assert math.isclose(metrics["pass@1[avg-of-3]/accuracy/std_err_across_runs"], std / math.sqrt(3))
    assert "majority@1/accuracy" in metrics


def test_highest_k_metrics() -> None:
    metrics, _ = pass_majority_metrics(
        [rows([1, 0, 1, 1], ["B", "C", "B", "B"])], answer_key="extracted_answer"
    )
    top = highest_k_metrics(metrics, "pass@1[avg-of-{k}]", score_names=["accuracy"])
    assert top == {"pass@1[avg-of-4]/accuracy": 75.0}
    assert set(highest_k_metrics(metrics, "pass@{k}")) == {"pass@4/accuracy", "pass@4/no_answer"}
    assert set(highest_k_metrics(metrics, "majority@{k}", exclude_names=["no_answer"])) == {
        "majority@4/accuracy"
    }
    assert highest_k_metrics({}, "pass@{k}") == {}


def test_grouping_and_baseline_statistics() -> None:
    data: list[dict[str, Any]] = [
        {"_ng_task_index": 1, "_ng_rollout_index": 1, "reward": 1.0, "ok": True},
        {"_ng_task_index": 1, "_ng_rollout_index": 0, "reward": 0.0, "ok": False},
        {
            "_ng_task_index": 0,
            "_ng_rollout_index": 0,
            "reward": 1.0,
            "ok": True,
            "response": {"usage": {"input_tokens": 4}},
        },
    ]
    tasks = group_by_task(data)
    assert [t for t, _ in tasks] == [0, 1]
    assert [r["_ng_rollout_index"] for r in tasks[1][1]] == [0, 1]
    agent, groups = basic_profile(tasks)
    assert agent["mean/reward"] == 2 / 3 and agent["mean/ok"] == 2 / 3
    assert agent["std/reward"] == statistics.stdev([1.0, 0.0, 1.0])
    assert agent["mean/input_tokens"] == 4.0
    assert list(agent)[:2] == ["mean/reward", "mean/ok"]  # stat-major keys
    assert groups[1]["std/reward"] == statistics.stdev([0.0, 1.0]) and groups[0]["std/reward"] == 0.0
    assert groups[1]["num_rollouts"] == 2


def test_compute_aggregate_metrics_merges_environment_metrics() -> None:
    data = [{"_ng_task_index": 0, "_ng_rollout_index": i, "reward": float(i % 2)} for i in range(4)]

    def env_metrics(tasks: list[list[dict[str, Any]]]) -> dict[str, Any]:
        return {"tasks_seen": len(tasks), "per_task_metrics": [{"custom": 7}]}

    result = compute_aggregate_metrics(data, compute_metrics=env_metrics)
    assert result.agent_metrics["tasks_seen"] == 1
    assert result.group_level_metrics[0]["custom"] == 7
    assert result.key_metrics == {"mean/reward": 0.5}


def test_unequal_repeats_with_a_score_only_some_rollouts_carry() -> None:
    def score(row: Mapping[str, Any]) -> dict[str, float | int | bool]:
        out: dict[str, float | int | bool] = {"accuracy": float(row["reward"])}
        if row.get("judged"):
            out["judge"] = float(row["reward"])
        return out

    tasks = [
        [{"reward": 1.0, "extracted_answer": "a", "judged": True}, {"reward": 0.0, "extracted_answer": "b"}],
        [{"reward": 0.0, "extracted_answer": "c", "judged": True}],
        [{"reward": 1.0, "extracted_answer": "a"}, {"reward": 1.0, "extracted_answer": "a"},
         {"reward": 0.0, "extracted_answer": "d", "judged": True}],
    ]  # fmt: skip
    metrics, _ = pass_majority_metrics(tasks, score, answer_key="extracted_answer")
    for k in (1, 2, 3):
        assert 0.0 <= metrics[f"majority@{k}/judge"] <= 100.0
        assert 0.0 <= metrics[f"pass@{k}/judge"] <= 100.0
    assert metrics["pass@3/accuracy/tasks_with_k_rollouts"] == 1.0
