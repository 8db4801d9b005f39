"""Health checks added to close issue #12: tasks the run never reached (``task_not_collected``) and
responses without token counts (``model_call_missing_token_counts``, NeMo Gym's id)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from rewardgym.analysis import analyze_files
from tests.analysis.helpers import inputs_for, read_lines, rollout, write


def _run(
    tmp_path: Path, rows: list[dict[str, Any]], tasks: int, failures: list[dict[str, Any]] | None = None
) -> Any:
    write(tmp_path / "run_materialized_inputs.jsonl", inputs_for(tasks, 2))
    if failures:
        write(tmp_path / "run_failures.jsonl", failures)
    return analyze_files(None, write(tmp_path / "run.jsonl", rows), strict=False, health_only=True)


def test_tasks_with_neither_rollouts_nor_failures_are_a_finding(tmp_path: Path) -> None:
    rows = [rollout(t, r) for t in range(3) for r in range(2)]
    failures = [
        {"_ng_task_index": 3, "_ng_rollout_index": r, "_ng_failure_class": "timeout"} for r in range(2)
    ]
    result = _run(tmp_path, rows, tasks=8, failures=failures)  # tasks 4..7: never collected
    health = result.analysis.health
    assert health.uncollected_tasks.tolist() == [4, 5, 6, 7]
    found = {f.check: f for f in health.findings}
    finding = found["task_not_collected"]
    assert (finding.count, finding.of, finding.unit) == (4, 8, "tasks")
    assert finding.severity == "error"  # half of the tasks
    assert finding.examples == [(4, None), (5, None), (6, None), (7, None)]
    assert "--resume" in finding.fix
    assert "task_no_successful_model_calls" in found  # task 3: failed, which is not "not collected"
    summary = orjson.loads((tmp_path / "run_quality_summary.json").read_bytes())
    assert summary["run"]["issues"]["task_not_collected"] == 4
    assert summary["rewardgym"]["verdict"] == "unhealthy"


def test_one_missing_task_of_many_is_a_warning(tmp_path: Path) -> None:
    rows = [rollout(t, r) for t in range(40) for r in range(2) if t != 17]
    result = _run(tmp_path, rows, tasks=40)
    finding = {f.check: f for f in result.analysis.health.findings}["task_not_collected"]
    assert (finding.severity, finding.count, finding.examples) == ("warning", 1, [(17, None)])


def test_a_complete_run_has_no_uncollected_tasks(tmp_path: Path) -> None:
    rows = [rollout(t, r) for t in range(5) for r in range(2)]
    result = _run(tmp_path, rows, tasks=5)
    assert result.analysis.health.uncollected_tasks.tolist() == []
    assert result.analysis.health.verdict == "healthy"
    # a task whose only missing repeat is in the failures file is collected (just failed)
    rows.pop()
    failures = [{"_ng_task_index": 4, "_ng_rollout_index": 1, "_ng_failure_class": "timeout"}]
    result = _run(tmp_path, rows, tasks=5, failures=failures)
    assert "task_not_collected" not in {f.check for f in result.analysis.health.findings}


def test_missing_token_counts_are_found_per_rollout(tmp_path: Path) -> None:
    no_usage = rollout(0, 1)
    del no_usage["response"]["usage"]
    null_prompt = rollout(1, 0)
    null_prompt["response"]["usage"] = {"input_tokens": None, "output_tokens": 0}
    chat_names = rollout(1, 1)
    chat_names["response"]["usage"] = {"prompt_tokens": 3, "completion_tokens": 4}
    no_response = rollout(2, 0)
    del no_response["response"]
    rows = [rollout(0, 0), no_usage, null_prompt, chat_names, no_response, rollout(2, 1)]
    result = _run(tmp_path, rows, tasks=3)
    flags = result.analysis.health.rollout_flags["model_call_missing_token_counts"]
    assert flags.tolist() == [False, True, True, False, False, False]
    verdicts = {
        (v["_ng_task_index"], v["_ng_rollout_index"]): v
        for v in read_lines(tmp_path / "run_rollout_verdicts.jsonl")
    }
    assert {
        "check": "model_call_missing_token_counts",
        "detail": {"missing": ["prompt_tokens", "completion_tokens"]},
    } in verdicts[0, 1]["findings"]
    assert {"check": "model_call_missing_token_counts", "detail": {"missing": ["prompt_tokens"]}} in verdicts[
        1, 0
    ]["findings"]
    assert verdicts[1, 1]["verdict"] == "unobserved" and not verdicts[1, 1]["findings"]
    finding = {f.check: f for f in result.analysis.health.findings}["model_call_missing_token_counts"]
    assert (finding.count, finding.severity, finding.examples) == (2, "warning", [(0, 1), (1, 0)])
