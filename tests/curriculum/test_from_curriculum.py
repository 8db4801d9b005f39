"""``gym eval run --from-curriculum URL``: a real run against the Bernoulli stub agent takes its inputs
from a real ``gym curriculum serve`` process in batches and reports every group's rewards back to it."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import orjson
import pytest

from tests.collect.test_adaptive_run import _input
from tests.curriculum.test_server import call, start
from tests.stubs.bernoulli_agent import start_bernoulli_agent
from tests.stubs.processes import free_port, gym_environ

pytestmark = pytest.mark.slow


def test_a_run_takes_batches_from_the_service_and_reports_each_group(tmp_path: Path) -> None:
    rows = _input(tmp_path)
    (tmp_path / "rows.jsonl").write_bytes(rows.read_bytes())  # the service's dataset = the run's tasks
    port = free_port()
    # No token here: the stub agent is its own head registry and cannot prove it holds one.
    service = start(tmp_path, port, token=None, policy="expected-signal")
    try:
        with start_bernoulli_agent("--delay-ms", "0") as agent:
            done = subprocess.run(
                [
                    sys.executable, "-m", "rewardgym", "eval", "run", "--no-serve", "--head-url", agent.url,
                    "-o", "out/rollouts.jsonl", "--concurrency", "4", "--no-health-check",
                    "--disable-aggregation", "--from-curriculum", f"http://127.0.0.1:{port}",
                    "--curriculum-batches", "3", "--curriculum-batch-size", "5",
                ],
                cwd=tmp_path, env=gym_environ(), capture_output=True, text=True, timeout=300, check=False,
            )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Curriculum batch 3: 5 tasks, 20 rollouts" in done.stdout
        assert "Curriculum: 15 groups reported" in done.stdout
        rollouts = [
            orjson.loads(line) for line in (tmp_path / "out" / "rollouts.jsonl").read_bytes().splitlines()
        ]
        keys = [(r["_ng_task_index"], r["_ng_rollout_index"]) for r in rollouts]
        assert len(rollouts) == 60 and len(set(keys)) == 60  # 3 batches × 5 tasks × G = 4, no key twice
        per_task = Counter(task for task, _ in keys)
        assert all(count % 4 == 0 for count in per_task.values())
        rewards: dict[int, list[float]] = defaultdict(list)
        for row in rollouts:
            rewards[row["_ng_task_index"]].append(float(row["reward"]))
        status, state = call(f"http://127.0.0.1:{port}/state?limit=30", token=None)
        assert status == 200 and state["reports"] == 15 and state["step"] == 3
        tasks = state["tasks"]
        for task, count in per_task.items():
            assert tasks["served"][task] == tasks["reported"][task] == count // 4
        informative = sum(
            1
            for task, values in rewards.items()
            for start_ in range(0, len(values), 4)
            if len(set(sorted(values)[start_ : start_ + 4])) > 1 and per_task[task] == 4
        )
        once = [t for t, c in per_task.items() if c == 4]  # a task of one batch: its one group is all of it
        assert sum(tasks["informative"][t] for t in once) == informative
    finally:
        service.kill()


def test_from_curriculum_refuses_other_inputs(tmp_path: Path) -> None:
    _input(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "rewardgym", "eval", "run", "--no-serve", "--input", "tasks.jsonl",
         "--from-curriculum", "http://127.0.0.1:9"],
        cwd=tmp_path, env=gym_environ(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Error: --from-curriculum takes its inputs from the service: not with --input" in done.stderr
