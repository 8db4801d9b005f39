"""NeMo Gym 0.7.0's trajectory checks (docs/reference/health_check.md §2), each rule on a hand-built record
whose right answer the reference states, and the verdict rows ``gym eval health-check`` writes for them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson

from rewardgym.analysis import analyze_files
from rewardgym.analysis.trajectory_checks import TRAJECTORY_CHECKS, evaluate
from rewardgym.analysis.trajectory_schema import trajectory_error
from tests.analysis.helpers import read_lines

REF = {"type": "responses_api_models", "name": "policy_model"}
ANSWER = [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "B"}]}]


def _call(
    cid: str, rid: str, *, status: int = 200, started: float = 1.0, out: int = 5, **meta: Any
) -> dict[str, Any]:
    response = {"id": rid, "output": ANSWER, "status": "completed"} if status < 400 else None
    return {
        "model_call_id": cid, "started_at": started, "completed_at": started + 1, "duration_ms": 1000.0,
        "request": {"input": "q"}, "response": response,
        "response_metadata": {"response_id": rid, "model_ref": REF, "status_code": status, **meta},
        "token_stats": {"prompt_tokens": 10, "completion_tokens": out},
    }  # fmt: skip


def _turn(no: int, rid: str, answer: Any = ANSWER) -> dict[str, Any]:
    return {
        "invocation_id": "root", "task_id": "0", "rollout_id": "0-0", "turn_no": no, "timestamp": float(no),
        "question": [], "answer": answer, "reasoning_content": None, "resolved": None, "step_count": 0,
        "model_calls": [{"model_call_id": None, "model_ref": REF, "response_id": rid}],
    }  # fmt: skip


def _record(
    calls: list[dict[str, Any]], turns: list[dict[str, Any]], usage: tuple[int, int] = (10, 5)
) -> dict[str, Any]:
    refs = [r for t in turns for r in t["model_calls"]]
    trajectory = {
        "schema_version": "1.0", "task_id": "0", "rollout_id": "0-0",
        "invocations": [{"kind": "agent_invocation", "invocation_id": "root", "status": "completed",
                         "model_calls": refs, "conversation": [{"role": "user", "content": "q"}]}],
        "turns": turns, "model_calls": calls, "tool_calls": [], "gaps": [],
    }  # fmt: skip
    return {
        "_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1.0,
        "response": {"output": ANSWER, "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}},
        "ng_trajectory": trajectory,
    }  # fmt: skip


def _checks(record: dict[str, Any]) -> list[str]:
    return [f["check"] for f in evaluate(record).findings]


def test_a_clean_trajectory_is_healthy_and_every_check_evaluated() -> None:
    result = evaluate(_record([_call("c1", "r1")], [_turn(1, "r1")]))
    assert result.findings == [] and result.unobserved == []
    assert result.policy_calls_observed and result.turn_success == 1


def test_no_trajectory_leaves_every_trajectory_check_unobserved() -> None:
    assert evaluate({"_ng_task_index": 0}).unobserved == list(TRAJECTORY_CHECKS)
    assert evaluate({"_ng_task_index": 0}, ignored={"model_call_failed"}).unobserved == [
        c for c in TRAJECTORY_CHECKS if c != "model_call_failed"
    ]


def test_an_invalid_trajectory_is_unreadable() -> None:
    record = _record([_call("c1", "r1")], [_turn(1, "r1")])
    record["ng_trajectory"]["extra"] = 1  # the schema forbids extra keys
    result = evaluate(record)
    assert result.findings == [
        {
            "check": "record_unreadable",
            "detail": {"reason": "canonical trajectory is unreadable", "error": "ValidationError"},
        }
    ]
    assert result.unobserved == list(TRAJECTORY_CHECKS)
    good = _record([_call("c1", "r1")], [_turn(1, "r1")])["ng_trajectory"]
    for broken in (
        {**good, "turns": [{**good["turns"][0], "rollout_id": "other"}]},  # a turn of another rollout
        {**good, "model_calls": [good["model_calls"][0]] * 2},  # a duplicate model call id
        {**good, "turns": [{**good["turns"][0], "turn_no": 0}]},
        {**good, "turns": [{**good["turns"][0], "model_calls": [{"response_id": "r1"}]}]},  # no join key
    ):
        assert trajectory_error(broken) == "ValidationError"
    assert trajectory_error(good) is None


def test_ended_on_a_failed_call_and_the_failed_call() -> None:
    calls = [
        _call("c1", "r1", started=1.0),
        _call("c3", "r3", status=500, started=2.0, error_category="upstream_error"),
    ]
    result = evaluate(_record(calls, [_turn(1, "r1"), _turn(2, "r3", answer=[])]))
    ended = [f for f in result.findings if f["check"] == "rollout_ended_on_failed_model_call"]
    assert ended == [
        {"check": "rollout_ended_on_failed_model_call", "locator": {"call_id": "c3"},
         "detail": {"model_ref": "responses_api_models/policy_model", "status": 500,
                    "error_category": "upstream_error", "observed_calls": 2, "successful_calls": 1}}
    ]  # fmt: skip
    hollow = [f for f in result.findings if f["check"] == "agent_turn_hollow"]
    assert hollow == [
        {
            "check": "agent_turn_hollow",
            "locator": {"turn": 2},
            "detail": {"reason": "agent turn has no message or tool calls"},
        }
    ]
    failed = [f for f in result.findings if f["check"] == "model_call_failed"]
    assert failed == [
        {"check": "model_call_failed", "locator": {"call_id": "c3"},
         "detail": {"status": 500, "error_category": "upstream_error", "terminal": True}}
    ]  # fmt: skip
    assert result.failed_calls == 1 and result.ended_on_error and result.errors_by_status == {"500": 1}


def test_a_mixed_model_without_start_times_does_not_end_on_failure() -> None:
    calls = [_call("c1", "r1"), _call("c2", "r2", status=500)]
    calls[0]["started_at"] = None
    assert "rollout_ended_on_failed_model_call" not in _checks(
        _record(calls, [_turn(1, "r1"), _turn(2, "r2")])
    )


def test_token_counts() -> None:
    zero = _record([_call("c1", "r1", out=0)], [_turn(1, "r1")], usage=(10, 0))
    assert _checks(zero) == ["model_call_zero_completion_tokens"]
    mismatch = _record([_call("c1", "r1")], [_turn(1, "r1")], usage=(11, 5))
    assert evaluate(mismatch).findings == [
        {"check": "rollout_token_count_mismatch",
         "detail": {"transcript_prompt": 11, "transcript_completion": 5,
                    "capture_prompt": 10, "capture_completion": 5}}
    ]  # fmt: skip
    missing = _record([_call("c1", "r1")], [_turn(1, "r1")])
    missing["ng_trajectory"]["model_calls"][0]["token_stats"] = {
        "prompt_tokens": 10,
        "completion_tokens": None,
    }
    result = evaluate(missing)
    assert [f["detail"] for f in result.findings] == [{"missing": ["completion_tokens"]}]
    assert "rollout_token_count_mismatch" in result.unobserved  # a matched call lacks a count
    null_usage = _record([_call("c1", "r1")], [_turn(1, "r1")])
    null_usage["response"]["usage"] = {"input_tokens": None, "prompt_tokens": 10, "output_tokens": 5}
    assert (
        "rollout_token_count_mismatch" in evaluate(null_usage).unobserved
    )  # an explicit null blocks the fallback


def test_capture_mismatch_missing_and_duplicated_references() -> None:
    record = _record(
        [_call("c1", "r1"), _call("c2", "r2"), _call("c3", "r2")], [_turn(1, "r1"), _turn(2, "r2")]
    )
    record["ng_trajectory"]["invocations"][0]["model_calls"].append({"model_ref": REF, "response_id": "r9"})
    found = [f for f in evaluate(record).findings if f["check"] == "trajectory_capture_mismatch"]
    assert found == [
        {"check": "trajectory_capture_mismatch", "locator": {"call_id": "r9"},
         "detail": {"kind": "missing_captured_call"}},
        {"check": "trajectory_capture_mismatch", "locator": {"call_id": "r2"},
         "detail": {"kind": "duplicated_captured_call", "count": 2}},
    ]  # fmt: skip


def test_runaway_generation() -> None:
    record = _record([_call("c1", "r1", finish_reason="length")], [_turn(1, "r1")])
    record["ng_trajectory"]["model_calls"][0]["response"]["output"] = [{"type": "function_call", "name": "f"}]
    assert evaluate(record).findings[-1] == {
        "check": "model_call_runaway_generation",
        "locator": {"call_id": "c1"},
        "detail": {"finish_reason": "length"},
    }
    record["ng_trajectory"]["model_calls"][0]["response"] = None
    assert "model_call_runaway_generation" in evaluate(record).unobserved


def test_gaps_gate_the_checks() -> None:
    record = _record([_call("c1", "r1")], [_turn(1, "r1")])
    record["ng_trajectory"]["gaps"] = [
        {"code": "model_call_capture_incomplete", "invocation_id": None, "detail": None}
    ]
    result = evaluate(record)
    assert result.unobserved == [
        c for c in TRAJECTORY_CHECKS if c not in ("rollout_missing_agent_turns", "agent_turn_hollow")
    ]
    record["ng_trajectory"]["gaps"] = [
        {"code": "trajectory_projection_failed", "invocation_id": None, "detail": "X"}
    ]
    assert evaluate(record).unobserved == list(TRAJECTORY_CHECKS)


def test_verdict_rows_follow_nemo_gym(tmp_path: Path) -> None:
    clean = _record([_call("c1", "r1")], [_turn(1, "r1")])
    failing = copy.deepcopy(clean)
    failing["_ng_task_index"] = 1
    failing["_ng_rollout_id"] = "custom.1"  # NeMo Gym's verdict row names a rollout by it
    failing["ng_trajectory"]["task_id"] = "1"
    failing["ng_trajectory"]["turns"][0]["task_id"] = "1"
    failing["ng_trajectory"]["model_calls"][0]["response_metadata"]["status_code"] = 500
    plain = {"_ng_task_index": 2, "_ng_rollout_index": 0, "reward": 1.0, "response": clean["response"]}
    path = tmp_path / "rollouts.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in (clean, failing, plain)) + b"{oops\n")
    analyze_files(None, path, health_only=True, strict=False)
    rows = read_lines(tmp_path / "rollouts_rollout_verdicts.jsonl")
    assert [r["verdict"] for r in rows] == ["healthy", "unhealthy", "unobserved", "unhealthy"]
    assert rows[0] == {"_ng_task_index": 0, "_ng_rollout_index": 0, "rollout_id": "0-0", "verdict": "healthy",
                       "findings": [], "unobserved": []}  # fmt: skip
    assert [f["check"] for f in rows[1]["findings"]] == [
        "rollout_ended_on_failed_model_call",
        "model_call_failed",
    ]
    assert rows[1]["rollout_id"] == "custom.1" and rows[2]["rollout_id"] == "2-0"
    assert rows[2]["unobserved"] == list(TRAJECTORY_CHECKS)
    assert rows[3]["unobserved"] == [
        "check_execution_error", "rollout_duplicate_identity", *TRAJECTORY_CHECKS,
    ]  # fmt: skip
    summary = orjson.loads((tmp_path / "rollouts_quality_summary.json").read_bytes())
    assert summary["run"]["verdicts"] == {"healthy": 1, "unhealthy": 2, "unobserved": 1}
    assert summary["run"]["artifacts"]["captures"] == 2
    assert summary["run"]["stats"]["model_call_errors"] == {
        "total": 1, "by_status": {"500": 1}, "rollouts_affected": 1, "ended_on_error": 1,
    }  # fmt: skip
    assert summary["run"]["issues"]["model_call_failed"] == 1
    assert summary["tasks"]["1"]["flags"] == ["task_no_successful_model_calls"]
    assert summary["tasks"]["2"]["unobserved"] == 1
