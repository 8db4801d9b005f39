"""Hand-computed cases: the worked example of docs/reference/profile.md §12, the test oracle of
docs/reference/contract.md §5, and small cases whose numbers are easy to check by hand."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytest

from rewardgym.profile import profile_results, profile_rows
from tests.profile.helpers import rows_and_results


def _worked_example() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rows = [
        {"_ng_task_index": t, "_ng_rollout_index": r, "agent_ref": {"name": "solver"}, "prompt": f"p{t}"}
        for t in range(3)
        for r in range(2)
    ]
    table = [
        (0, 0, 1.0, False),
        (0, 1, 0.0, False),
        (1, 0, 1.0, False),
        (1, 1, 1.0, False),
        (2, 0, 0.0, False),
        (2, 1, 0.0, True),
    ]
    results = []
    for t, r, reward, masked in table:
        result: dict[str, Any] = {
            "_ng_task_index": t,
            "_ng_rollout_index": r,
            "response": {},
            "reward": reward,
            "mask_sample": masked,
        }
        if masked:
            result |= {"failure_kind": "judge_failed", "failure_reason": "judge timed out"}
        results.append(result)
    return rows, results


def test_delta_worked_example() -> None:
    rows, results = _worked_example()
    with pytest.warns(
        UserWarning,
        match=r"1 repeat\(s\) are missing rollouts for some tasks "
        r"\(e\.g\. agent='solver', _ng_rollout_index=1, missing_count=1\)",
    ):
        profile = profile_rows(rows, results)
    first, second = profile.repeat_level_metrics
    assert (first["sample_count"], first["missing_count"]) == (3, 0)
    assert first["mean/reward"] == pytest.approx(2 / 3)
    assert first["median/reward"] == 1.0
    assert first["std/reward"] == pytest.approx(0.57735, abs=1e-5)
    assert first["sem/reward"] == pytest.approx(0.33333, abs=1e-5)
    assert (first["p25/reward"], first["p75/reward"]) == (0.5, 1.0)
    assert first["ci_low_95/reward"] == pytest.approx(-0.76755, abs=1e-5)
    assert first["ci_high_95/reward"] == pytest.approx(2.10088, abs=1e-5)
    assert list(second) == [
        "agent_ref",
        "_ng_rollout_index",
        "sample_count",
        "missing_count",
        "mean/reward",
        "median/reward",
        "std/reward",
        "sem/reward",
        "min/reward",
        "max/reward",
        "p25/reward",
        "p75/reward",
        "ci_low_95/reward",
        "ci_high_95/reward",
    ]
    assert second["agent_ref"] == {"name": "solver"} and second["_ng_rollout_index"] == 1
    assert (second["sample_count"], second["missing_count"]) == (2, 1)
    assert second["mean/reward"] == 0.5 and second["median/reward"] == 0.5
    assert second["std/reward"] == pytest.approx(0.70711, abs=1e-5) and second["sem/reward"] == 0.5
    assert (second["min/reward"], second["max/reward"], second["p25/reward"], second["p75/reward"]) == (
        0.0,
        1.0,
        0.25,
        0.75,
    )
    assert second["ci_low_95/reward"] == pytest.approx(-5.85310, abs=1e-5)
    assert second["ci_high_95/reward"] == pytest.approx(6.85310, abs=1e-5)

    (agent,) = profile.agent_metrics
    assert agent["mean/reward"] == 0.6 and agent["median/reward"] == 1.0
    assert agent["std/reward"] == pytest.approx(0.54772, abs=1e-5)
    assert agent["mean_across_repeats/mean/reward"] == pytest.approx(0.58333, abs=1e-5)
    assert agent["median_across_repeats/mean/reward"] == pytest.approx(0.58333, abs=1e-5)
    assert agent["std_across_repeats/mean/reward"] == pytest.approx(0.11785, abs=1e-5)
    assert agent["min_across_repeats/mean/reward"] == 0.5
    assert agent["max_across_repeats/mean/reward"] == pytest.approx(0.66667, abs=1e-5)
    assert agent["se_across_repeats/mean/reward"] == pytest.approx(0.08333, abs=1e-5)
    assert agent["ci_low_95_across_repeats/mean/reward"] == pytest.approx(-0.47552, abs=1e-5)
    assert agent["ci_high_95_across_repeats/mean/reward"] == pytest.approx(1.64218, abs=1e-5)
    assert list(agent)[-4:] == [
        "coverage/measured_rollouts",
        "coverage/masked_rollouts",
        "coverage/measured_tasks",
        "coverage/fully_masked_tasks",
    ]
    assert [agent[k] for k in list(agent)[-4:]] == [5, 1, 3, 0]
    assert not any("mask_sample" in key for key in agent)

    task2 = profile.task_rows[2]
    assert (
        task2["num_rollouts"],
        task2["expected_num_rollouts"],
        task2["reward_profile_completion_pct"],
    ) == (1, 1, 100.0)
    assert [info["rollout_id"] for info in task2["rollout_infos"]] == ["2:0"]
    c = profile.completion
    assert (c.completed_rollout_rows, c.expected_rollout_rows, c.reward_profile_completion_pct) == (
        6,
        6,
        100.0,
    )
    assert (c.total_input_rows, c.complete_input_rows, c.partial_input_rows, c.missing_input_rows) == (
        3,
        3,
        0,
        0,
    )
    assert profile.masked_rollouts == 1


def test_contract_oracle() -> None:
    """docs/reference/contract.md §5: 3 tasks, rewards [0, 1], a bool [True, False], usage 'abc usage': 1."""
    rows, results = [], []
    for t in range(3):
        for r, (reward, flag) in enumerate([(0, True), (1, False)]):
            rows.append({"_ng_task_index": t, "_ng_rollout_index": r, "agent_ref": {"name": "a"}})
            results.append(
                {
                    "_ng_task_index": t,
                    "_ng_rollout_index": r,
                    "reward": reward,
                    "flag": flag,
                    "response": {"usage": {"abc usage": 1}},
                }
            )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profile = profile_rows(rows, results)
    for row in profile.task_rows:
        assert row["std/reward"] == pytest.approx(math.sqrt(0.5))
        assert row["mean/flag"] == 0.5
        assert row["std/abc usage"] == 0.0
        assert row["rollout_infos"][0] == {
            "rollout_id": f"{row['_ng_task_index']}:0",
            "_ng_task_index": row["_ng_task_index"],
            "_ng_rollout_index": 0,
            "reward": 0,
            "abc usage": 1,
            "flag": 1,
        }
    (agent,) = profile.agent_metrics
    assert agent["std/reward"] == pytest.approx(0.5477225575051661)
    assert list(profile.task_rows[0])[:4] == ["_ng_task_index", "mean/reward", "mean/flag", "mean/abc usage"]


def test_hand_computed_task_row() -> None:
    rows, results = rows_and_results({7: [1.0, 0.0, 0.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (row,) = profile_rows(rows, results).task_rows
    assert row == {
        "_ng_task_index": 7,
        "mean/reward": 1 / 3,
        "max/reward": 1.0,
        "min/reward": 0.0,
        "median/reward": 0.0,
        "std/reward": 0.5773502691896258,  # pandas' two-pass value (math.sqrt(1 / 3) is one ulp lower)
        "sample": {"prompt": "p7", "agent_ref": {"name": "agent"}},
        "num_rollouts": 3,
        "expected_num_rollouts": 3,
        "missing_num_rollouts": 0,
        "reward_profile_completion_pct": 100.0,
        "rollout_infos": [
            {"rollout_id": f"7:{r}", "_ng_task_index": 7, "_ng_rollout_index": r, "reward": v}
            for r, v in enumerate([1.0, 0.0, 0.0])
        ],
    }


def test_fields_in_some_rollouts_and_first_seen_order() -> None:
    """Column order is first-seen over the sorted results; a field absent from a task is left out there."""
    rows, results = rows_and_results({0: [1.0, 0.0], 1: [0.5]})
    results[1]["late"] = 3  # task 0, rollout 1
    results[2]["later"] = 2.5  # task 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        task0, task1 = profile_rows(rows, results[::-1]).task_rows
    assert list(task0)[1:11] == [
        "mean/reward",
        "mean/late",
        "max/reward",
        "max/late",
        "min/reward",
        "min/late",
        "median/reward",
        "median/late",
        "std/reward",
        "sample",
    ]
    # 'late' has one value in task 0: its std is undefined while reward's is not, so it is left out.
    assert "std/late" not in task0 and task0["mean/late"] == 3.0
    assert list(task1)[1:6] == ["mean/reward", "mean/later", "max/reward", "max/later", "min/reward"]
    # task 1 has one rollout: every std is undefined, so the fields present in it get 0.
    assert task1["std/reward"] == 0.0 and task1["std/later"] == 0.0 and "mean/late" not in task1


def test_missing_or_null_response_and_underscore_fields() -> None:
    rows, results = rows_and_results({0: [1.0, 0.0, 1.0]})
    results[0].pop("response")
    results[1]["response"] = None
    results[2]["response"] = {"usage": {"input_tokens": 5, "_ng_cost": 2}}
    results[2]["_ng_attempt_index"] = 1
    results[2]["_private"] = 9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (row,) = profile_rows(rows, results).task_rows
    assert "mean/input_tokens" in row and not any(
        "_ng_cost" in k or "_private" in k or "attempt" in k for k in row
    )
    assert row["rollout_infos"][2] == {
        "rollout_id": "0:2",
        "_ng_task_index": 0,
        "_ng_rollout_index": 2,
        "reward": 1.0,
        "input_tokens": 5,
        "_ng_cost": 2,
    }


@pytest.mark.parametrize(
    ("value", "masked"),
    [(True, True), (1, True), ("yes", True), (0, False), (None, False), ("", False), (False, False)],
)
def test_mask_sample_truthiness(value: Any, masked: bool) -> None:
    rows, results = rows_and_results({0: [1.0, 0.0]})
    results[1]["mask_sample"] = value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profile = profile_rows(rows, results)
    assert profile.masked_rollouts == int(masked)
    assert profile.task_rows[0]["num_rollouts"] == (1 if masked else 2)
    assert profile.completion.completed_rollout_rows == 2  # masked rollouts still count as completed


def test_fan_out_rows_per_task_and_agent() -> None:
    rows, results = [], []
    for agent, rewards in (("zeta", [1.0, 1.0]), ("alpha", [0.0, 1.0])):
        for r, reward in enumerate(rewards):
            index = r if agent == "zeta" else r + 2
            rows.append({"_ng_task_index": 0, "_ng_rollout_index": index, "agent_ref": {"name": agent}})
            results.append({"_ng_task_index": 0, "_ng_rollout_index": index, "reward": reward})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profile = profile_rows(rows, results)
    alpha, zeta = profile.task_rows
    assert (alpha["agent_ref"], zeta["agent_ref"]) == ({"name": "alpha"}, {"name": "zeta"})
    assert list(alpha)[list(alpha).index("agent_ref") + 1] == "sample"
    assert alpha["mean/reward"] == 0.5 and zeta["mean/reward"] == 1.0
    assert [i["rollout_id"] for i in alpha["rollout_infos"]] == ["0:2", "0:3"]
    assert profile.completion.total_input_rows == 2
    assert [a["agent_ref"]["name"] for a in profile.agent_metrics] == ["alpha", "zeta"]


def test_labels_fall_back_to_server_names() -> None:
    """One agent fronted by two environment servers: rows are labelled by server, coverage by agent."""
    rows, results = [], []
    for t, server in ((0, "envX"), (1, "envY")):
        for r in range(2):
            rows.append(
                {
                    "_ng_task_index": t,
                    "_ng_rollout_index": r,
                    "agent_ref": {"name": "agentA"},
                    "_ng_environment_server": server,
                }
            )
            results.append(
                {
                    "_ng_task_index": t,
                    "_ng_rollout_index": r,
                    "reward": float(r),
                    "mask_sample": t == 1 and r == 1,
                }
            )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profile = profile_rows(rows, results)
    names = [a["agent_ref"]["name"] for a in profile.agent_metrics]
    assert names == ["envX", "envY", "agentA"]
    assert profile.agent_metrics[2] == {
        "agent_ref": {"name": "agentA"},
        "coverage/measured_rollouts": 3,
        "coverage/masked_rollouts": 1,
        "coverage/measured_tasks": 2,
        "coverage/fully_masked_tasks": 0,
    }


def test_partial_collection_drops_tasks_without_rollouts() -> None:
    rows, results = rows_and_results({0: [1.0, 0.0], 5: [1.0], 9: [0.0, 0.0]})
    kept = [
        r
        for r in results
        if not (r["_ng_task_index"] == 5 or (r["_ng_task_index"] == 9 and r["_ng_rollout_index"] == 1))
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profile = profile_rows(rows, kept, allow_partial=True)
    assert [r["_ng_task_index"] for r in profile.task_rows] == [0, 9]
    task9 = profile.task_rows[1]
    assert (task9["num_rollouts"], task9["expected_num_rollouts"], task9["missing_num_rollouts"]) == (1, 2, 1)
    assert task9["reward_profile_completion_pct"] == 50.0
    c = profile.completion
    assert (c.completed_rollout_rows, c.expected_rollout_rows) == (3, 5)
    assert (c.total_input_rows, c.complete_input_rows, c.partial_input_rows, c.missing_input_rows) == (
        3,
        1,
        1,
        1,
    )


def test_rows_without_agent_are_profiled_per_task_only() -> None:
    rows, results = rows_and_results({0: [1.0, 0.0]})
    for row in rows:
        row.pop("agent_ref")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profile = profile_rows(rows, results)
    assert len(profile.task_rows) == 1 and profile.agent_metrics == [] and profile.repeat_level_metrics == []


def test_large_integers_are_kept_exact_in_rollout_infos() -> None:
    big = 2**62 + 1
    rows, results = rows_and_results({0: [1.0]}, extra={"tokens": big})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (row,) = profile_rows(rows, results).task_rows
    assert row["rollout_infos"][0]["tokens"] == big
    assert row["mean/tokens"] == float(big)


def test_non_finite_values_in_memory() -> None:
    """NaN (only possible in memory: JSON files cannot hold it) counts as absent, as in pandas.

    An infinite value propagates."""
    rows, results = rows_and_results({0: [1.0, 0.0, 1.0]})
    results[0]["score"] = math.nan
    results[1]["score"] = 2.0
    results[2]["score"] = 4.0
    results[0]["cost"] = math.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (row,) = profile_rows(rows, results).task_rows
    assert row["mean/score"] == 3.0 and row["std/score"] == pytest.approx(math.sqrt(2))
    assert row["mean/cost"] is None  # inf is written as null by orjson, as NeMo Gym would
    assert "std/cost" not in row  # a single value: undefined, left out


def test_profile_results_for_aggregate_metrics() -> None:
    """NeMo Gym's /aggregate_metrics profiles verify results alone, as one agent named 'agent'."""
    results = [
        {
            "_ng_task_index": t,
            "_ng_rollout_index": r,
            "reward": float((t + r) % 2),
            "response": {"usage": {"x": 1}},
        }
        for t in range(3)
        for r in range(2)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profile = profile_results(results[::-1])
    (agent,) = profile.agent_metrics
    assert agent["agent_ref"] == {"name": "agent"} and agent["mean/reward"] == 0.5
    assert [row["_ng_task_index"] for row in profile.task_rows] == [0, 1, 2]
    assert profile.task_rows[0]["sample"] == {"agent_ref": {"name": "agent"}}
