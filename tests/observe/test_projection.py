"""The collector's join (``rewardgym.observe.projection``) on capture files written by the capture store and
a trajectory recorded by the agent's recorder, and what NeMo Gym 0.7.0's checks say of the result."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson

from rewardgym.analysis.trajectory_checks import evaluate
from rewardgym.analysis.trajectory_schema import trajectory_error
from rewardgym.observe.capture import CaptureStore, call_line, rollout_id_of
from rewardgym.observe.projection import clear_capture, observe_row
from rewardgym.observe.trajectory import TrajectoryRecorder

ROW = {"_ng_task_index": 4, "_ng_rollout_index": 1, "responses_create_params": {"input": "q"}}
CALL = {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city": "SF"}'}
SAY = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "sunny"}]}


def _response(rid: str, output: list[Any], tokens: tuple[int, int]) -> dict[str, Any]:
    usage = {"input_tokens": tokens[0], "output_tokens": tokens[1], "total_tokens": sum(tokens)}
    return {
        "id": rid,
        "object": "response",
        "status": "completed",
        "model": "m",
        "output": output,
        "usage": usage,
    }


def _episode(store: CaptureStore) -> tuple[dict[str, Any], TrajectoryRecorder]:
    """Two model calls (a tool call, then the answer) as the model server and the agent record them."""
    recorder = TrajectoryRecorder("policy_model")
    question: list[Any] = [{"role": "user", "content": "q"}]
    for rid, output, tokens in (("r1", [CALL], (10, 3)), ("r2", [SAY], (20, 2))):
        response = _response(rid, output, tokens)
        request = orjson.dumps({"input": question})
        line = call_line(
            dialect="responses", model_name="policy_model", started=time.time(),
            started_clock=time.perf_counter(), status=200, request=request,
            response=orjson.dumps(response), streamed=False,
        )  # fmt: skip
        assert store.append("4-1", line)
        recorder.turn(time.time(), question, response)
        if output == [CALL]:
            recorder.tool(CALL, 1.0, 2.0, 1000.0, None, '{"weather": "sunny"}')
        question = [*question, *output]
    result = {
        **ROW,
        "reward": 1.0,
        "response": {"output": question[1:], "usage": {"input_tokens": 30, "output_tokens": 5}},
    }
    result["ng_trajectory"] = recorder.record(ROW, "4-1", question, True)
    return result, recorder


def test_capture_and_trajectory_join_into_a_healthy_row(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    result, _ = _episode(store)
    observe_row(store, ROW, result, 12.5)
    trajectory = result["ng_trajectory"]
    assert trajectory_error(trajectory) is None
    assert [t["step_count"] for t in trajectory["turns"]] == [1, 1] and trajectory["turns"][-1][
        "resolved"
    ] is True
    assert trajectory["gaps"] == [] and len(trajectory["model_calls"]) == 2
    assert trajectory["tool_calls"][0]["status"] == "completed"
    capture = result["ng_model_call_capture"]
    assert capture["metrics"] == {
        "tokens_in": 30, "tokens_out": 5, "tokens_reasoning": None, "tokens_total": 35, "cached_tokens": None,
        "latency_total_ms": capture["metrics"]["latency_total_ms"], "num_calls": 2,
    }  # fmt: skip
    assert all("request" not in call and "response" not in call for call in capture["calls"])
    assert result["ng_perf"] == {
        "num_turns": 2, "num_tool_calls": 1, "token_observability_coverage": 1.0, "prompt_tokens": 30,
        "completion_tokens": 5, "total_latency_ms": 12.5,
    }  # fmt: skip
    checks = evaluate(result)
    assert checks.findings == [] and checks.unobserved == []


def test_gaps_of_a_damaged_capture_make_the_checks_unobserved(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    result, _ = _episode(store)
    with store.path("4-1").open("ab") as handle:
        handle.write(b"{torn\n")
    store.marker("4-1").touch()
    observe_row(store, ROW, result, None)
    codes = [g["code"] for g in result["ng_trajectory"]["gaps"]]
    assert codes == ["model_call_capture_records_unreadable", "model_call_capture_incomplete"]
    assert result["ng_model_call_capture"]["gaps"][0]["detail"] == "count=1"
    unobserved = evaluate(result).unobserved
    assert "model_call_failed" in unobserved and "agent_turn_hollow" not in unobserved
    clear_capture(store, ROW)
    assert not store.path("4-1").exists() and not store.marker("4-1").exists()


def test_no_capture_and_no_trajectory(tmp_path: Path) -> None:
    result: dict[str, Any] = {**ROW, "reward": 0.0, "response": {"output": []}}
    observe_row(CaptureStore(tmp_path), ROW, result, 3.0)
    codes = [g["code"] for g in result["ng_trajectory"]["gaps"]]
    assert codes == ["model_call_capture_no_records", "model_calls_unavailable", "turns_unavailable",
                     "conversation_unavailable"]  # fmt: skip
    assert "ng_perf" not in result  # 0.7.0 writes it only for a trajectory with an invocation


def test_rollout_ids() -> None:
    assert rollout_id_of(ROW) == "4-1"
    assert rollout_id_of({**ROW, "_ng_attempt_index": 2}) == "4-1-a2"
    assert rollout_id_of({**ROW, "_ng_rollout_id": "run.7_x"}) == "run.7_x"
    for bad in ("../x", ".hidden", 7):
        try:
            rollout_id_of({**ROW, "_ng_rollout_id": bad})
        except ValueError as exc:
            assert "_ng_rollout_id" in str(exc)
        else:
            raise AssertionError(bad)
