"""An adaptive run's files through analyze, profile and compare: the design is read from ``<stem>_run.json``
and every per-task number is the estimate unbiased under the stopping rule, labelled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from rewardgym.stats.adaptive import LEGACY_RULE, AdaptivePolicy
from rewardgym.stats.sequential import rao_blackwell
from rewardgym.stats.simulate import POOLS, adaptive_run, draw_outcomes
from tests.analysis.helpers import rollout, write
from tests.profile.helpers import cli

TASKS = 120


def _write_run(folder: Path, outcomes: np.ndarray, counts: np.ndarray, policy: AdaptivePolicy | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    inputs: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for task in range(outcomes.shape[0]):
        for index in range(int(counts[task])):
            inputs.append({"_ng_task_index": task, "_ng_rollout_index": index, "agent_ref": {"name": "a"},
                           "responses_create_params": {"input": f"question {task}"}})  # fmt: skip
            rows.append(rollout(task, index, reward=float(outcomes[task, index])))
    write(folder / "run_materialized_inputs.jsonl", inputs)
    rollouts = write(folder / "run.jsonl", rows)
    if policy is not None:
        (folder / "run_run.json").write_bytes(orjson.dumps({"settings": {"adaptive": policy.as_dict()}}))
    return rollouts


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("adaptive-design")
    rng = np.random.default_rng(21)
    p = POOLS["balanced"].draw(rng, TASKS)
    outcomes = draw_outcomes(p, 16, rng)
    policy = AdaptivePolicy()
    run = adaptive_run(p, policy, rng, outcomes)
    adaptive = _write_run(folder / "adaptive", outcomes, run.blocks.n, policy)
    fixed = _write_run(folder / "fixed", draw_outcomes(p, 16, rng), np.full(TASKS, 16), None)
    return {"adaptive": adaptive, "fixed": fixed, "estimate": rao_blackwell(run.blocks, policy, run.fits),
            "blocks": run.blocks}  # fmt: skip


def test_analyze_shows_the_unbiased_estimate_and_says_so(runs: dict[str, Any]) -> None:
    rollouts: Path = runs["adaptive"]
    done = cli("eval", "analyze", "--rollouts", str(rollouts), "--no-report")
    assert done.returncode == 0, done.stderr
    assert "Adaptive run: per-task pass rates are estimates unbiased under its stopping rule" in done.stdout
    doc = orjson.loads(rollouts.with_name("run_analysis.json").read_bytes())
    assert doc["uncertainty"]["design"] == "adaptive"
    got = np.array(doc["per_task"]["pass_rate"], dtype=np.float64)
    assert np.allclose(got, runs["estimate"])  # the files replay the rule exactly as it ran
    observed = np.array(doc["per_task"]["observed_pass_rate"])
    assert np.allclose(observed, runs["blocks"].s / runs["blocks"].n)
    assert not np.allclose(got, observed)  # the biased s / n is kept apart, not shown as the rate
    assert doc["uncertainty"]["pass_rate_overall"] == pytest.approx(float(np.mean(runs["estimate"])))


def test_the_profile_summary_of_an_adaptive_run_uses_the_estimates(runs: dict[str, Any]) -> None:
    rollouts: Path = runs["adaptive"]
    inputs = rollouts.with_name("run_materialized_inputs.jsonl")
    done = cli("eval", "profile", "--inputs", str(inputs), "--rollouts", str(rollouts))
    assert done.returncode == 0, done.stderr
    assert (
        "Adaptive run: pass rates below are per-task estimates unbiased under its stopping rule"
        in done.stdout
    )
    assert f"Mean reward: {float(np.mean(runs['estimate'])):.4f}" in done.stdout


def test_compare_of_an_adaptive_and_a_fixed_run_of_one_policy(runs: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "compare.json"
    done = cli(
        "eval", "compare", str(runs["fixed"]), str(runs["adaptive"]), "--output", str(out), "--no-html"
    )
    assert done.returncode == 0, done.stderr
    doc = orjson.loads(out.read_bytes())
    assert [run["design"] for run in doc["runs"]] == ["fixed", "adaptive"]
    overall = doc["comparisons"][0]["overall"]
    assert overall["verdict"] == "no detectable change", overall
    assert overall["minimum_detectable_difference"] > 0


def test_a_run_recorded_before_the_regret_rule_is_replayed_with_its_own(
    runs: dict[str, Any], tmp_path: Path
) -> None:
    folder = tmp_path / "old"
    folder.mkdir()
    for path in runs["adaptive"].parent.glob("run*.jsonl"):
        (folder / path.name).write_bytes(path.read_bytes())
    old = {k: v for k, v in AdaptivePolicy().as_dict().items() if k not in ("rule", "confidence")}
    (folder / "run_run.json").write_bytes(orjson.dumps({"settings": {"adaptive": old}}))
    done = cli("eval", "analyze", "--rollouts", str(folder / "run.jsonl"), "--no-report")
    assert done.returncode == 0, done.stderr
    doc = orjson.loads((folder / "run_analysis.json").read_bytes())
    assert doc["uncertainty"]["design"] == "adaptive"
    assert AdaptivePolicy.from_dict(old).rule == LEGACY_RULE
