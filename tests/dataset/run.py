"""Real runs for the ``gym data select`` tests: original task rows materialized by the collector's own
code (with per-rollout seeds), rollouts with known pass counts, then ``gym eval profile`` and
``gym eval analyze`` through the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from rewardgym.collect.materialize import MaterializeOptions, iter_materialized
from tests.analysis.helpers import rollout, write
from tests.profile.helpers import cli

DOMAINS = ("math", "geo", "code")
PASSES = (0, 0, 1, 2, 3, 4, 4, 5, 6, 7, 8, 8)
"""Passes of 8 repeats per task of :func:`build_run`."""
IDENTICAL = 11
"""Every repeat of this task says the same: the analysis flags it ``repeats_identical``."""
CUT_OFF = 0
"""Every repeat of this task is cut off at the cap: ``task_zero_all_cut_off``."""
ONE_CUT_OFF = 7
"""One (failed) repeat of this task is cut off: an unhealthy rollout, no task flag."""


def task_row(t: int, domain: str | None = None) -> dict[str, Any]:
    return {
        "responses_create_params": {
            "input": [{"role": "user", "content": f"question {t}"}],
            "temperature": 1.0,
        },
        "domain": domain or DOMAINS[t % 3],
        "expected_answer": str(t),
    }


def _rollouts(materialized: list[dict[str, Any]], passes: dict[int, int]) -> list[dict[str, Any]]:
    rows = []
    for row in materialized:
        task, rep = row["_ng_task_index"], row["_ng_rollout_index"]
        reward = 1.0 if rep < passes[task] else 0.0
        extra = {k: v for k, v in row.items() if k not in ("_ng_task_index", "_ng_rollout_index")}
        cut_off = task == CUT_OFF or (task == ONE_CUT_OFF and rep == 7)
        if cut_off and len(passes) == len(PASSES):
            made = rollout(task, rep, reward, text="", out_tokens=64, status="incomplete", cap=64)
        elif task == IDENTICAL and len(passes) == len(PASSES):
            made = rollout(task, rep, reward, text="the same answer")
        else:
            made = rollout(task, rep, reward)
        rows.append({**made, **extra, "reward": reward})
    return rows[::-1]


def build(
    folder: Path, tasks: list[dict[str, Any]], passes: list[int], repeats: int, stem: str = "run"
) -> Path:
    """Materialize ``tasks`` × ``repeats`` (with seeds), write rollouts with ``passes[t]`` passes, profile
    and analyze; returns the profile."""
    folder.mkdir(parents=True, exist_ok=True)
    source = write(folder / f"{stem}_tasks.jsonl", tasks)
    materialized = list(
        iter_materialized(source, MaterializeOptions(num_repeats=repeats, add_seed=True, agent_name="a"))
    )
    inputs = folder / f"{stem}_materialized_inputs.jsonl"
    inputs.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in materialized))
    rollouts = write(folder / f"{stem}.jsonl", _rollouts(materialized, dict(enumerate(passes))))
    for step in (("eval", "profile"), ("eval", "analyze", "--no-report")):
        done = cli(*step, "--inputs", str(inputs), "--rollouts", str(rollouts))
        assert done.returncode == 0, done.stderr
    return folder / f"{stem}_reward_profiling.jsonl"


def build_run(folder: Path) -> Path:
    """12 tasks × 8 repeats with :data:`PASSES`; two of them flagged by the health checks."""
    return build(folder, [task_row(t) for t in range(len(PASSES))], list(PASSES), 8)


def build_deep_run(folder: Path) -> Path:
    """3 tasks × 150 repeats: 75 passes (settled in (40–60 %]), 0 passes (settled at 0 %), and 70 passes
    (not settled) — the last one is task 5 of :func:`build_run` by content."""
    tasks = [task_row(100, "logic"), task_row(101, "logic"), task_row(5)]
    return build(folder, tasks, [75, 0, 70], 150, stem="deep")


def materialized(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]
