"""Golden tests against real NeMo Gym 0.7.0 outputs (``tests/data/nemo_gym/nemo_gym_0.7.0_outputs``).

The 0.7.0 run profiled 500 tasks × 4 repeats made from the 5 ``smoke_5`` tasks (task ``t`` is smoke task
``t % 5``, its ``uuid`` suffixed ``-rep<t // 5>``; the fake model answers every repeat identically). The
full inputs are not shared, so they are rebuilt here from the smoke files; the agent-level and
repeat-level files and the first three per-task rows must then come out byte for byte, and the printed
summary line for line.
"""

from __future__ import annotations

import random
import warnings
from pathlib import Path
from typing import Any

import orjson

from rewardgym.profile import profile_files, profile_rows
from tests.conftest import NG_OUTPUTS
from tests.profile.helpers import gym, read_jsonl, write_jsonl


def _by_task(path: Path) -> dict[int, dict[str, Any]]:
    return {row["_ng_task_index"]: row for row in read_jsonl(path)}


def build_500(folder: Path) -> tuple[Path, Path]:
    """Rebuild the 2000-rollout run (rollouts shuffled, as collection writes them) under ``folder``."""
    inputs = _by_task(NG_OUTPUTS / "smoke_5_materialized_inputs.jsonl")
    results = _by_task(NG_OUTPUTS / "smoke_5rollouts.jsonl")
    rows, rollouts = [], []
    for task in range(500):
        base = inputs[task % 5]
        for rollout in range(4):
            row = {k: v for k, v in base.items() if not k.startswith("_ng_")}
            row["uuid"] = f"{base['uuid']}-rep{task // 5:03d}"
            rows.append({**row, "_ng_task_index": task, "_ng_rollout_index": rollout})
            rollouts.append({**results[task % 5], "_ng_task_index": task, "_ng_rollout_index": rollout})
    random.Random(7).shuffle(rollouts)
    return (
        write_jsonl(folder / "r_materialized_inputs.jsonl", rows),
        write_jsonl(folder / "r.jsonl", rollouts),
    )


def test_agent_and_repeat_files_and_first_rows_are_byte_identical(tmp_path: Path) -> None:
    inputs, rollouts = build_500(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = profile_files(inputs, rollouts)
    assert result.paths is not None
    assert result.paths.agent_metrics.read_bytes() == (NG_OUTPUTS / "r_agent_metrics.json").read_bytes()
    assert (
        result.paths.repeat_level_metrics.read_bytes()
        == (NG_OUTPUTS / "r_repeat_level_metrics.json").read_bytes()
    )
    lines = result.paths.reward_profiling.read_bytes().splitlines(keepends=True)
    assert len(lines) == 500
    assert b"".join(lines[:3]) == (NG_OUTPUTS / "reward_profiling.first3.jsonl").read_bytes()
    # NeMo Gym warns "Standard error is 0" here (its profile.log); we write the same numbers silently.
    assert not [w for w in caught if "Standard error" in str(w.message)]


def test_printed_summary_matches_profile_log(tmp_path: Path) -> None:
    build_500(tmp_path / "out")
    run = gym(
        "eval",
        "profile",
        "--inputs",
        "out/r_materialized_inputs.jsonl",
        "--rollouts",
        "out/r.jsonl",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    log = (NG_OUTPUTS / "profile.log").read_text().splitlines()
    start = log.index("Profiling outputs:")
    expected = log[start : start + 7]
    assert run.stdout.splitlines()[:7] == expected
    assert "Standard error" not in run.stderr
    assert "Mean reward: 0.2000" in run.stdout


def test_smoke_5_complete_run_is_consistent(tmp_path: Path) -> None:
    inputs = write_jsonl(
        tmp_path / "s_materialized_inputs.jsonl", read_jsonl(NG_OUTPUTS / "smoke_5_materialized_inputs.jsonl")
    )
    rollouts = write_jsonl(tmp_path / "s.jsonl", read_jsonl(NG_OUTPUTS / "smoke_5rollouts.jsonl"))
    result = profile_files(inputs, rollouts)
    assert result.paths is not None
    rows = read_jsonl(result.paths.reward_profiling)
    assert [r["_ng_task_index"] for r in rows] == [0, 1, 2, 3, 4]
    smoke = _by_task(NG_OUTPUTS / "smoke_5rollouts.jsonl")
    for row in rows:
        source = smoke[row["_ng_task_index"]]
        usage = source["response"]["usage"]
        assert row["mean/reward"] == row["max/reward"] == float(source["reward"])
        assert row["mean/input_tokens"] == float(usage["input_tokens"])
        # One rollout: every std is undefined, so NeMo Gym writes 0.
        assert [v for k, v in row.items() if k.startswith("std/")] == [0.0, 0.0, 0.0, 0.0]
        assert (row["num_rollouts"], row["expected_num_rollouts"], row["missing_num_rollouts"]) == (1, 1, 0)
        assert row["reward_profile_completion_pct"] == 100.0
        assert "mask_sample" not in row["rollout_infos"][0]
        assert not any(k.endswith("mask_sample") for k in row)
    (agent,) = orjson.loads(result.paths.agent_metrics.read_bytes())
    assert agent["mean/reward"] == 0.2
    assert agent["mean/input_tokens"] == 262.2
    assert agent["agent_ref"] == {"name": "mcqa_simple_agent"}
    assert not any("across_repeats" in key for key in agent)  # a single repeat
    assert result.paths.repeat_level_metrics.read_bytes() == b"[]"


def test_rollouts_first3_infos_match_the_golden_rows() -> None:
    """The shared first three rollouts reproduce their entries of the golden first rows."""
    rows = read_jsonl(NG_OUTPUTS / "materialized_inputs.first3.jsonl")
    results = read_jsonl(NG_OUTPUTS / "rollouts.first3.jsonl")
    golden = read_jsonl(NG_OUTPUTS / "reward_profiling.first3.jsonl")
    task0 = [r for r in results if r["_ng_task_index"] == 0]
    assert {r["_ng_task_index"] for r in results} == {0, 10}  # they do not cover whole tasks
    profiled = profile_rows(rows, task0, allow_partial=True)
    (row,) = profiled.task_rows
    assert row["rollout_infos"] == golden[0]["rollout_infos"][: len(task0)]
    assert row["sample"] == golden[0]["sample"]
    assert (row["num_rollouts"], row["expected_num_rollouts"], row["missing_num_rollouts"]) == (2, 3, 1)
    assert orjson.dumps(
        {k: v for k, v in row.items() if k.startswith(("mean/", "max/", "min/", "median/", "std/"))}
    ) == orjson.dumps(
        {k: v for k, v in golden[0].items() if k.startswith(("mean/", "max/", "min/", "median/", "std/"))}
    )
