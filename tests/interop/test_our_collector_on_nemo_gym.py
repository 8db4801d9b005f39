"""Our collector through a NeMo Gym 0.7.0 stack (docs/reference/nemo_gym_interop.md §2).

A real HTTP head answering NeMo Gym 0.7.0's recorded ``/server_instances`` (their field names:
``process_name`` = instance, ``server_type`` = kind, ``name`` = implementation) and a real HTTP agent
answering their recorded ``/run`` and ``/aggregate_metrics`` bodies; ``gym eval run --no-serve
--head-url`` must find the agent and collect end to end; ``gym env status`` must show the NeMo Gym
servers. The record parser is also checked on both shapes directly.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from rewardgym.launch.head_records import HeadRecord, read_records
from rewardgym.launch.serve import ThreadedServer
from tests.stubs.nemo_gym_stack import AgentLog, nemo_gym_agent_app, nemo_gym_head_app, recorded
from tests.stubs.processes import gym_environ

AGENT = "example_single_tool_call_simple_agent"
EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "nemo_gym" / "nemo_gym_examples"


def test_nemo_gym_records_read_in_our_field_names() -> None:
    records = read_records(recorded("head_server_instances.json"))
    assert records is not None
    by_name = {r.name: r for r in records}
    assert set(by_name) == {
        "example_single_tool_call",
        AGENT,
        "example_single_tool_call_environment_server",
        "policy_model",
    }
    agent = by_name[AGENT]
    assert (agent.kind, agent.implementation, agent.origin) == (
        "responses_api_agents",
        "simple_agent",
        "nemo_gym",
    )
    assert agent.url.startswith("http://127.0.0.1:") and agent.status is None and agent.model is None
    assert by_name["example_single_tool_call_environment_server"].kind == "environment_servers"


def test_our_records_and_odd_entries() -> None:
    ours = {
        "name": "a", "kind": "responses_api_agents", "implementation": "simple_agent",
        "url": "http://127.0.0.1:1", "status": "exited", "exit_code": 3, "model": None,
        # what our head adds for NeMo Gym's tools: must not change how ours is read
        "process_name": "a", "server_type": "responses_api_agents", "host": "127.0.0.1", "port": 1,
    }  # fmt: skip
    record = HeadRecord.model_validate(ours)
    assert (record.name, record.implementation, record.status, record.origin) == (
        "a",
        "simple_agent",
        "exited",
        "rewardgym",
    )
    # NeMo Gym record without url: built from host and port; a probe status is not a lifecycle status
    ng = {
        "process_name": "x",
        "server_type": "resources_servers",
        "name": "impl",
        "host": "127.0.0.1",
        "port": 9,
        "status": "success",
    }
    assert HeadRecord.model_validate(ng).url == "http://127.0.0.1:9"
    assert HeadRecord.model_validate(ng).status is None
    assert read_records([ours, "junk", {"name": "no kind"}, ng]) is not None
    assert [r.name for r in read_records([ours, "junk", {"name": "no kind"}, ng]) or []] == ["a", "x"]
    assert read_records({"not": "a list"}) is None


@pytest.fixture
def nemo_gym_stack() -> Iterator[tuple[str, AgentLog]]:
    log = AgentLog()
    agent = ThreadedServer(nemo_gym_agent_app(log), name="ng-agent").start()
    head = ThreadedServer(nemo_gym_head_app(agent.url), name="ng-head").start()
    try:
        yield head.url, log
    finally:
        head.stop()
        agent.stop()


def _gym(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewardgym", *args], cwd=cwd, env=gym_environ(), capture_output=True,
        text=True, timeout=300, check=False,
    )  # fmt: skip


def test_gym_eval_run_no_serve_collects_through_a_nemo_gym_head(
    tmp_path: Path, nemo_gym_stack: tuple[str, AgentLog]
) -> None:
    head, log = nemo_gym_stack
    rows = (EXAMPLES / "example_single_tool_call" / "example.jsonl").read_bytes().splitlines()[:3]
    (tmp_path / "in.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    run = _gym(
        "eval", "run", "--no-serve", "--head-url", head, "--agent", AGENT, "--input", "in.jsonl",
        "--output", "out/rollouts.jsonl", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "no such agent" not in run.stdout + run.stderr
    rollouts = [
        orjson.loads(line) for line in (tmp_path / "out" / "rollouts.jsonl").read_bytes().splitlines()
    ]
    assert len(rollouts) == 3 and len(log.runs) == 3
    # NeMo Gym's answer is stored as given (their extra fields included) with our keys added
    assert all(r["reward"] == 1.0 and r["agent_ref"] == {"name": AGENT} for r in rollouts)
    assert all(
        "mask_sample" in r and "failure_kind" in r and r["response"]["usage"]["total_tokens"] > 0
        for r in rollouts
    )
    assert sorted(r["_ng_task_index"] for r in rollouts) == [0, 1, 2]
    assert {r["_ng_environment_server"] for r in rollouts} == {"example_single_tool_call_environment_server"}
    # their /aggregate_metrics answer is what our metrics file holds
    assert len(log.aggregates) == 1 and len(log.aggregates[0]["verify_responses"]) == 3
    metrics = orjson.loads((tmp_path / "out" / "rollouts_aggregate_metrics.json").read_bytes())
    assert AGENT in orjson.dumps(metrics).decode()
    # what NeMo Gym 0.7.0's agent adds to its answer is kept, after NeMo Gym 0.5's four keys
    assert list(metrics[0]) == [
        "agent_ref", "agent_metrics", "key_metrics", "group_level_metrics",
        "repeat_level_metrics", "perf_summary",
    ]  # fmt: skip
    assert metrics[0]["agent_metrics"]["num_repeats"] == 1 and metrics[0]["perf_summary"] is None
    assert "Key metrics for " + AGENT in run.stdout


def test_gym_env_status_shows_a_nemo_gym_stack(tmp_path: Path, nemo_gym_stack: tuple[str, AgentLog]) -> None:
    head, _log = nemo_gym_stack
    status = _gym("env", "status", "--head-url", head, "--json", cwd=tmp_path)
    # only the played-back agent answers: the other recorded servers are not running here
    assert status.returncode == 1, status.stdout + status.stderr
    shown = orjson.loads(status.stdout)
    servers = {s["name"]: s for s in shown["servers"]}
    assert servers[AGENT]["healthy"] is True and servers[AGENT]["implementation"] == "simple_agent"
    assert (
        servers["policy_model"]["healthy"] is False
        and servers["policy_model"]["kind"] == "responses_api_models"
    )
    assert "Traceback" not in status.stderr


def test_rows_carry_the_relay_the_nemo_gym_head_reports(tmp_path: Path) -> None:
    # A relay whose name NeMo Gym's naming rule would not give: only the head's config document says it.
    log = AgentLog()
    agent = ThreadedServer(nemo_gym_agent_app(log), name="ng-agent").start()
    head = ThreadedServer(nemo_gym_head_app(agent.url, relay="tool_env_relay"), name="ng-head").start()
    try:
        rows = (EXAMPLES / "example_single_tool_call" / "example.jsonl").read_bytes().splitlines()[:2]
        (tmp_path / "in.jsonl").write_bytes(b"\n".join(rows) + b"\n")
        run = _gym(
            "eval", "run", "--no-serve", "--head-url", head.url, "--agent", AGENT, "--input", "in.jsonl",
            "--output", "out/rollouts.jsonl", "--no-health-check", cwd=tmp_path,
        )  # fmt: skip
    finally:
        head.stop()
        agent.stop()
    assert run.returncode == 0, run.stdout + run.stderr
    lines = (tmp_path / "out" / "rollouts.jsonl").read_bytes().splitlines()
    assert [orjson.loads(line)["_ng_environment_server"] for line in lines] == ["tool_env_relay"] * 2
