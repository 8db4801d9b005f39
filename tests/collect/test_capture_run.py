"""Trajectory capture end to end, over real processes: `gym eval run ++observability_enabled=true` starts an
openai_model (→ the scripted stub, with an API key), an environment and simple_agent; every model call lands
in ``<capture dir>/<rollout id>.capture.jsonl`` and the rows carry NeMo Gym 0.7.0's
``ng_model_call_capture``, ``ng_trajectory`` and ``ng_perf``. No capture file holds the key."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson

from rewardgym.launch.serve import ThreadedServer
from tests.collect.test_e2e_stack import API_KEY, STACK, _gym
from tests.conftest import EXAMPLES
from tests.stubs.openai_stub import StubState, start_stub


def _run(tmp_path: Path, upstream: ThreadedServer, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "stack.yaml").write_text(STACK)
    model = ["--model-url", f"{upstream.url}/v1", "--model", "stub", "--model-api-key", API_KEY]
    return _gym(
        "eval", "run", "--config", "stack.yaml", *model, "--input", str(EXAMPLES / "mcqa" / "example.jsonl"),
        "--agent", "mcqa_simple_agent", "--num-repeats", "2", "--output", "out/rollouts.jsonl", *extra,
        cwd=tmp_path,
    )  # fmt: skip


def _rows(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_capture_on_fills_the_rows_and_keeps_no_secret(tmp_path: Path, upstream: ThreadedServer) -> None:
    captures = tmp_path / "calls"
    run = _run(tmp_path, upstream, "++observability_enabled=true", f"++model_call_capture_dir={captures}")
    assert run.returncode == 0, run.stdout + run.stderr
    rows = _rows(tmp_path / "out" / "rollouts.jsonl")
    assert len(rows) == 10
    files = sorted(captures.glob("*.capture.jsonl"))
    assert [p.name for p in files] == sorted(
        f"{r['_ng_task_index']}-{r['_ng_rollout_index']}.capture.jsonl" for r in rows
    )
    for path in captures.iterdir():  # the key went to the stub upstream, never into a capture
        assert API_KEY.encode() not in path.read_bytes()
        assert b"Bearer" not in path.read_bytes()
    for row in rows:
        rid = f"{row['_ng_task_index']}-{row['_ng_rollout_index']}"
        (line,) = _rows(captures / f"{rid}.capture.jsonl")
        assert (
            line["status_code"] == 200 and line["dialect"] == "responses" and line["error_category"] is None
        )
        assert line["model_ref"] == {"type": "responses_api_models", "name": "policy_model"}
        capture = row["ng_model_call_capture"]
        assert capture["rollout_id"] == rid and capture["metrics"]["num_calls"] == 1
        assert "request" not in capture["calls"][0]  # the trajectory owns the bodies
        trajectory = row["ng_trajectory"]
        assert list(trajectory) == [
            "schema_version", "task_id", "rollout_id", "invocations", "turns", "model_calls", "tool_calls",
            "gaps",
        ]  # fmt: skip
        assert trajectory["rollout_id"] == rid and trajectory["task_id"] == str(row["_ng_task_index"])
        (call,) = trajectory["model_calls"]
        assert call["response"]["id"] == line["response"]["id"]
        assert call["response_metadata"]["response_id"] == call["response"]["id"]
        (turn,) = trajectory["turns"]
        assert turn["model_calls"][0]["response_id"] == call["response"]["id"]
        assert turn["answer"] and turn["resolved"] is None
        assert [g["code"] for g in trajectory["gaps"]] == ["resolution_unavailable"]
        perf = row["ng_perf"]
        assert perf["num_turns"] == 1 and perf["token_observability_coverage"] == 1.0
        assert (
            perf["prompt_tokens"]
            == call["token_stats"]["prompt_tokens"]
            == row["response"]["usage"]["input_tokens"]
        )
    # the closing health check sees the evidence: every trajectory check evaluated, nothing found
    verdicts = _rows(tmp_path / "out" / "rollouts_rollout_verdicts.jsonl")
    assert {(v["verdict"], len(v["findings"]), len(v["unobserved"])) for v in verdicts} == {("healthy", 0, 0)}
    assert "Rollout health: 10 checked, 10 healthy, 0 unhealthy, 0 unobserved" in run.stdout


def test_capture_off_rows_are_unobserved(tmp_path: Path, upstream: ThreadedServer) -> None:
    run = _run(tmp_path, upstream)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = _rows(tmp_path / "out" / "rollouts.jsonl")
    assert not any("ng_trajectory" in row or "ng_model_call_capture" in row for row in rows)
    assert all(row["ng_perf"]["token_observability_coverage"] == 1.0 for row in rows)  # ours, as before
    verdicts = _rows(tmp_path / "out" / "rollouts_rollout_verdicts.jsonl")
    assert {v["verdict"] for v in verdicts} == {"unobserved"}
    assert "Rollout health: 10 checked, 0 healthy, 0 unhealthy, 10 unobserved" in run.stdout


def test_capture_settings_are_checked_before_anything_starts(
    tmp_path: Path, upstream: ThreadedServer
) -> None:
    for args, fragment in (
        (["++observability_enabled=true"], "model_call_capture_dir: required"),
        (
            ["++observability_enabled=true", "++model_call_capture_dir=rel/dir"],
            "must be an absolute directory",
        ),
        (
            ["++observability_enabled=maybe", "++model_call_capture_dir=/tmp/x"],
            "observability_enabled: must be",
        ),
    ):
        run = _run(tmp_path, upstream, *args)
        assert run.returncode == 1, run.stdout + run.stderr  # a config error
        assert fragment in run.stdout + run.stderr
        assert len((run.stdout + run.stderr).strip().splitlines()) == 1
        assert not (tmp_path / "out").exists()


def test_env_start_checks_the_capture_settings_too(tmp_path: Path) -> None:
    run = _gym(
        "env", "start", "--resources-server", "mcqa", "--model-type", "vllm_model", "--model-url",
        "http://127.0.0.1:1/v1", "--model", "m", "--model-api-key", "abcdefgh",
        "++observability_enabled=true", "++model_call_capture_dir=rel", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 1
    assert run.stderr.strip() == (
        "Error: model_call_capture_dir: must be an absolute directory when observability_enabled is true, "
        "got 'rel'"
    )


TOOL_STACK = (
    STACK.split("mcqa:")[0]
    + """\
weather:
  resources_servers:
    example_single_tool_call:
      domain: agent
weather_agent:
  responses_api_agents:
    simple_agent:
      resources_server: {type: resources_servers, name: weather}
      model_server: {type: responses_api_models, name: policy_model}
"""
)


def test_a_tool_episode_is_captured_call_by_call(tmp_path: Path) -> None:
    upstream, stub = start_stub(StubState(mode="tool_then_answer", text="It is sunny."))
    try:
        (tmp_path / "stack.yaml").write_text(TOOL_STACK)
        rows = EXAMPLES / "example_single_tool_call" / "example.jsonl"
        captures = tmp_path / "calls"
        run = _gym(
            "eval", "run", "--config", "stack.yaml", "--model-url", f"{upstream.url}/v1", "--model", "stub",
            "--model-api-key", API_KEY, "--input", str(rows), "--agent", "weather_agent", "--limit", "3",
            "--output", "out/rollouts.jsonl", "++observability_enabled=true",
            f"++model_call_capture_dir={captures}", cwd=tmp_path,
        )  # fmt: skip
    finally:
        stub.released = True
        upstream.stop()
    assert run.returncode == 0, run.stdout + run.stderr
    for row in _rows(tmp_path / "out" / "rollouts.jsonl"):
        trajectory = row["ng_trajectory"]
        assert [t["step_count"] for t in trajectory["turns"]] == [1, 1]
        assert [c["tool_name"] for c in trajectory["tool_calls"]] == ["get_weather"]
        assert trajectory["tool_calls"][0]["status"] == "completed"
        assert len(trajectory["model_calls"]) == row["ng_model_call_capture"]["metrics"]["num_calls"] == 2
        assert row["ng_perf"]["num_turns"] == 2 and row["ng_perf"]["num_tool_calls"] == 1
        assert row["ng_perf"]["token_observability_coverage"] == 1.0
    verdicts = _rows(tmp_path / "out" / "rollouts_rollout_verdicts.jsonl")
    assert {(v["verdict"], len(v["findings"])) for v in verdicts} == {("healthy", 0)}
