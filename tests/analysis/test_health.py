"""Health checks: each check fires on the rollouts that show the problem, with evidence and a fix, and the
files keep NeMo Gym 0.7.0's layout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson

from rewardgym.analysis import analyze_files
from rewardgym.analysis.check_ids import ALL_CHECKS, NEMO_ONLY_CHECKS
from rewardgym.analysis.health_output import TaskEntries, health_summary, summary_bytes
from rewardgym.analysis.trajectory_checks import TRAJECTORY_CHECKS
from tests.analysis.helpers import inputs_for, read_lines, rollout, write
from tests.profile.helpers import cli


def _run(
    tmp_path: Path,
    rows: list[dict[str, Any]],
    failures: list[dict[str, Any]] | None = None,
    strict: bool = False,
) -> Any:
    rollouts = write(tmp_path / "run.jsonl", rows)
    if failures:
        write(tmp_path / "run_failures.jsonl", failures)
    return analyze_files(None, rollouts, strict=strict, health_only=True)


def test_healthy_run_has_no_findings(tmp_path: Path) -> None:
    rows = [rollout(t, r, reward=float(r % 2)) for t in range(3) for r in range(2)]
    result = _run(tmp_path, rows)
    assert result.analysis.health.verdict == "healthy"
    verdicts = read_lines(tmp_path / "run_rollout_verdicts.jsonl")
    # no ng_trajectory: NeMo Gym 0.7.0's trajectory checks cannot run, so every verdict is unobserved
    assert [v["verdict"] for v in verdicts] == ["unobserved"] * 6
    assert verdicts[0]["unobserved"] == list(TRAJECTORY_CHECKS)
    assert list(verdicts[0]) == [
        "_ng_task_index",
        "_ng_rollout_index",
        "rollout_id",
        "verdict",
        "findings",
        "unobserved",
    ]
    assert verdicts[0]["rollout_id"] == "0-0"


def test_each_problem_is_found_with_evidence_and_fix(tmp_path: Path) -> None:
    rows = [
        rollout(0, 0, extracted=None), rollout(0, 1, extracted=None),
        rollout(1, 0, text="", out_tokens=0), rollout(1, 1, reward=0.0),
        rollout(2, 0, reward=0.0, status="incomplete", cap=50),
        rollout(2, 1, reward=0.0, out_tokens=50, cap=50),
        rollout(3, 0, text="same"), rollout(3, 1, text="same"),
        rollout(4, 0, reward=7.0), rollout(4, 1),
        rollout(5, 0), rollout(5, 0),
    ]  # fmt: skip
    failures = [{"_ng_task_index": 9, "_ng_rollout_index": 0, "_ng_failure_class": "timeout"}]
    result = _run(tmp_path, rows, failures)
    health = result.analysis.health
    flags = health.rollout_flags
    assert flags["no_extracted_answer"].tolist()[:2] == [True, True]
    assert flags["agent_turn_hollow"].nonzero()[0].tolist() == [2]
    assert flags["model_call_zero_completion_tokens"].nonzero()[0].tolist() == [2]
    assert flags["rollout_cut_off"].nonzero()[0].tolist() == [4, 5]
    assert flags["reward_out_of_range"].nonzero()[0].tolist() == [8]
    assert flags["rollout_duplicate_identity"].nonzero()[0].tolist() == [10, 11]
    assert health.task_flags["repeats_identical"].tolist() == [False, False, False, True, False, True]
    assert health.task_flags["task_zero_all_cut_off"].tolist() == [False, False, True, False, False, False]
    found = {f.check: f for f in health.findings}
    for check in ("no_extracted_answer", "agent_turn_hollow", "rollout_cut_off", "reward_out_of_range",
                  "rollout_duplicate_identity", "task_zero_all_cut_off", "collection_failures",
                  "task_no_successful_model_calls", "repeats_identical"):  # fmt: skip
        assert check in found, check
        assert found[check].evidence and found[check].fix
    assert found["collection_failures"].evidence == "1 rollouts failed (timeout 1)"
    assert found["no_extracted_answer"].examples == [(0, 0), (0, 1)]
    assert health.verdict == "unhealthy"
    summary = orjson.loads((tmp_path / "run_quality_summary.json").read_bytes())
    assert list(summary) == ["run", "tasks", "rewardgym"]
    assert list(summary["run"]["issues"]) == [*ALL_CHECKS, *NEMO_ONLY_CHECKS]
    assert summary["run"]["issues"]["rollout_duplicate_identity"] == 2
    assert summary["tasks"]["9"]["flags"] == ["task_no_successful_model_calls"]
    assert summary["tasks"]["3"]["flags"] == ["repeats_identical"]
    assert not (tmp_path / "run_quality_summary.json").read_bytes().endswith(b"\n")


def test_health_check_command_reports_unreadable_lines(tmp_path: Path) -> None:
    rows = [rollout(0, 0), rollout(0, 1)]
    path = write(tmp_path / "rollouts.jsonl", rows)
    path.write_bytes(path.read_bytes() + b"{not json\n")
    run = cli("eval", "health-check", str(tmp_path))
    assert run.returncode == 4, run.stderr  # unhealthy: the documented exit code
    assert run.stdout.splitlines()[:2] == [
        "Rollout health: 3 checked, 0 healthy, 1 unhealthy, 2 unobserved",
        f"Quality summary: {tmp_path / 'rollouts_quality_summary.json'}",
    ]
    assert "Health: unhealthy" in run.stdout and "record_unreadable" in run.stdout
    last = read_lines(tmp_path / "rollouts_rollout_verdicts.jsonl")[-1]
    assert last["_ng_task_index"] == "__unreadable_record__:input-0:line-3"
    assert last["findings"][0]["locator"] == {"source_file": str(path), "line": 3}


def test_health_check_command_errors(tmp_path: Path) -> None:
    run = cli("eval", "health-check", str(tmp_path))
    assert run.returncode == 2 and f"Rollout JSONL not found: {tmp_path / 'rollouts.jsonl'}" in run.stderr
    run = cli("eval", "health-check")
    assert run.returncode == 2 and "--rollouts FILE" in run.stderr
    run = cli("eval", "health-check", str(tmp_path), "--rollouts", str(tmp_path / "r.jsonl"))
    assert run.returncode == 2 and "one of them" in run.stderr


def test_health_check_takes_rollouts_like_analyze_and_exits_by_verdict(tmp_path: Path) -> None:
    healthy = write(tmp_path / "good.jsonl", [rollout(t, r) for t in range(3) for r in range(2)])
    run = cli("eval", "health-check", "--rollouts", str(healthy))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Health: healthy" in run.stdout and (tmp_path / "good_quality_summary.json").is_file()
    sick = write(tmp_path / "bad.jsonl", [rollout(t, r, extracted=None) for t in range(3) for r in range(2)])
    run = cli("eval", "health-check", "--rollouts", str(sick))
    assert run.returncode == 4 and "Health: unhealthy" in run.stdout
    assert cli("eval", "health-check", "--rollouts", str(sick), "--json").returncode == 4
    assert cli("eval", "health-check", "--rollouts", str(sick), "--exit-zero").returncode == 0


def test_demo_like_run_without_extracted_answers_is_unhealthy(tmp_path: Path) -> None:
    rows = [rollout(t, r, reward=0.0, extracted=None) for t in range(5) for r in range(4)]
    write(tmp_path / "run_materialized_inputs.jsonl", inputs_for(5, 4))
    result = _run(tmp_path, rows)
    (finding,) = [f for f in result.analysis.health.findings if f.check == "no_extracted_answer"]
    assert finding.severity == "error" and finding.count == 20 and "100.0 %" in finding.evidence


def test_summary_orders_tasks_as_nemo_gym_does(tmp_path: Path) -> None:
    rows = [rollout(t, 0) for t in (2, 10, 1)]
    _run(tmp_path, rows)
    summary = orjson.loads((tmp_path / "run_quality_summary.json").read_bytes())
    assert list(summary["tasks"]) == ["1", "10", "2"]
    verdicts = read_lines(tmp_path / "run_rollout_verdicts.jsonl")
    assert [v["_ng_task_index"] for v in verdicts] == [1, 2, 10]


def test_summary_file_is_exactly_orjson_indented(tmp_path: Path) -> None:
    rows = [
        rollout(t, r, text="same" if t == 3 else None, extracted=None if t == 2 else "A")
        for t in range(12)
        for r in range(2)
    ]
    failures = [{"_ng_task_index": 40, "_ng_rollout_index": 0, "_ng_failure_class": "timeout"}]
    result = _run(tmp_path, rows, failures)
    summary = health_summary(result.scan.columns, result.analysis.health, 0)
    assert isinstance(summary["tasks"], TaskEntries)
    plain = {**summary, "tasks": summary["tasks"].as_dict()}
    assert summary_bytes(summary) == orjson.dumps(plain, option=orjson.OPT_INDENT_2)
    assert (tmp_path / "run_quality_summary.json").read_bytes() == summary_bytes(summary)
    assert plain["tasks"]["3"]["flags"] == ["repeats_identical"]
    assert plain["tasks"]["2"]["flags"] == ["task_consistently_unhealthy"]
    assert list(plain["tasks"])[:4] == ["0", "1", "10", "11"]


def test_lines_without_a_response_are_not_judged_hollow(tmp_path: Path) -> None:
    rows = [{"_ng_task_index": 0, "_ng_rollout_index": r, "reward": 1.0} for r in range(2)]
    result = _run(tmp_path, [*rows, rollout(1, 0, text="")])
    assert result.analysis.health.rollout_flags["agent_turn_hollow"].tolist() == [False, False, True]


def test_decimal_order_is_the_order_of_the_strings() -> None:
    from rewardgym.analysis.health_output import _decimal_order

    rng = np.random.default_rng(5)
    for drawn in (
        rng.integers(0, 10**6, 2000),
        rng.integers(-(10**5), 10**5, 2000),
        np.array([0, 1, 10, 2, 100, 19, 9, -1, -10, -2, 10**17, 10**18 - 1]),
        np.array([10**18, 5, 3 * 10**18, -(2**63)]),  # too wide to align: the strings' own sort
        np.array([-(2**63), 4, 40]),
    ):
        ids = np.unique(drawn.astype(np.int64))
        assert ids[_decimal_order(ids)].tolist() == [int(k) for k in sorted(map(str, ids.tolist()))]


def test_ignored_checks_do_not_run_and_are_recorded(tmp_path: Path) -> None:
    rows = [
        rollout(0, 0, extracted=None), rollout(0, 1, extracted=None),
        rollout(1, 0, text="same"), rollout(1, 1, text="same"), rollout(2, 0, reward=7.0),
    ]  # fmt: skip
    path = write(tmp_path / "rollouts.jsonl", rows)
    args = ("eval", "health-check", str(tmp_path), "--workers", "1", "--exit-zero")
    run = cli(*args, "--ignore-checks", "no_extracted_answer, repeats_identical,model_call_failed")
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0] == (
        "Rollout health: 5 checked, 0 healthy, 1 unhealthy, 4 unobserved "
        "(ignored: model_call_failed, no_extracted_answer, repeats_identical)"
    )
    summary = orjson.loads((tmp_path / "rollouts_quality_summary.json").read_bytes())
    assert summary["run"]["ignored_checks"] == [
        "model_call_failed",
        "no_extracted_answer",
        "repeats_identical",
    ]
    coverage = summary["run"]["artifacts"]["coverage"]
    assert coverage["no_extracted_answer"] == {"evaluated": 0, "unobserved": 0, "ignored": 5}
    assert coverage["repeats_identical"] == {"evaluated": 0, "unobserved": 0, "ignored": 3}
    assert summary["run"]["issues"]["no_extracted_answer"] == 0
    assert summary["tasks"]["1"]["flags"] == []
    checks = {f["check"] for f in summary["rewardgym"]["findings"]}
    assert "no_extracted_answer" not in checks and "reward_out_of_range" in checks
    verdicts = read_lines(tmp_path / "rollouts_rollout_verdicts.jsonl")
    assert [v["verdict"] for v in verdicts] == ["unobserved"] * 4 + ["unhealthy"]
    assert "model_call_failed" not in verdicts[0]["unobserved"]  # an ignored check is never unobserved
    assert coverage["model_call_failed"] == {"evaluated": 0, "unobserved": 0, "ignored": 5}
    assert coverage["rollout_missing_agent_turns"] == {"evaluated": 0, "unobserved": 5, "ignored": 0}
    assert path.is_file()
    for bad, fragment in (
        (("--ignore-checks", "a,,b"), "empty check id"),
        (("--ignore-checks", "nope,agent_turn_hollow"), "Unknown rollout health check(s): nope"),
        (("--workers", "0"), "workers must be at least 1"),
    ):
        run = cli("eval", "health-check", str(tmp_path), *bad)
        assert run.returncode == 2 and fragment in run.stderr, run.stderr
