"""A small real run for the export tests: rollouts, a failures sidecar and materialized inputs written by
hand, profiled and analyzed through the real CLI (``python -m rewardgym``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.analysis.helpers import inputs_for, rollout, write
from tests.profile.helpers import gym

REWARDS = {0: [1.0, 1.0, 0.0, 1.0], 1: [0.0, 0.0, 0.0], 2: [1.0, 0.0, 0.5, 1.0]}
"""Task 1's rollout 3 failed (it is in the failures sidecar, not in the rollouts)."""
FAILURE = {
    "_ng_task_index": 1,
    "_ng_rollout_index": 3,
    "agent_ref": {"name": "a"},
    "_ng_failure_class": "timeout",
    "_ng_failure_reason": "no answer within 30 s",
    "attempts": 3,
    "permanent": False,
}


def rollout_rows() -> list[dict[str, Any]]:
    rows = []
    for task, values in REWARDS.items():
        for rep, reward in enumerate(values):
            if (task, rep) == (2, 1):  # cut off at the cap, with an empty answer
                rows.append(rollout(task, rep, reward, text="", out_tokens=64, status="incomplete", cap=64))
            elif (task, rep) == (0, 2):
                rows.append(rollout(task, rep, reward, text="  naïve — “quoted”, a,b\nline two  "))
            else:
                rows.append(rollout(task, rep, reward, out_tokens=40 + 5 * rep))
    rows[-1]["agent_ref"] = {"name": "b"}
    return rows[::-1]  # out of order: the tables come back sorted by (task, rollout)


def build_run(folder: Path) -> tuple[Path, Path]:
    """``(inputs, rollouts)`` of a profiled and analyzed run in ``folder``."""
    inputs = write(folder / "run_materialized_inputs.jsonl", inputs_for(3, 4))
    rollouts = write(folder / "run.jsonl", rollout_rows())
    write(folder / "run_failures.jsonl", [FAILURE])
    for step in (
        ("eval", "profile", "--allow-partial-rollouts"),
        ("eval", "analyze", "--no-report"),
    ):
        done = gym(*step, "--inputs", str(inputs), "--rollouts", str(rollouts))
        assert done.returncode == 0, done.stderr
    return inputs, rollouts
