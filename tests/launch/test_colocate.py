"""``colocate: true`` over real processes: `gym env start` serves the agent, the environment and the model
server from one process; each still answers on its own port, a `gym eval run --no-serve` collects through
it, and the process's own servers are called without a socket (none of its TCP connections goes to one of
its own ports — the control run without the switch has them). A serving `gym eval run ++colocate=true` hosts
them in its own process and writes the same rows as separate servers."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import orjson
import psutil
import pytest

from rewardgym.launch.serve import ThreadedServer
from rewardgym.testing import OpenAIStub
from tests.collect.test_e2e_stack import API_KEY, STACK
from tests.conftest import EXAMPLES
from tests.stubs.processes import (
    GymProcess,
    instances,
    marked_processes,
    new_marker,
    poll,
    start_env,
)

Stub = tuple[ThreadedServer, OpenAIStub]


def _stack(folder: Path, upstream: ThreadedServer) -> list[str]:
    """The e2e stack (openai_model → the stub, an exact-match environment, simple_agent): its flags."""
    (folder / "stack.yaml").write_text(STACK)
    return ["--config", "stack.yaml", "--model-url", f"{upstream.url}/v1", "--model", "stub",
            "--model-api-key", API_KEY]  # fmt: skip


def _own_port_connections(pid: int, ports: set[int]) -> list[Any]:
    """The process's TCP connections to one of ``ports`` (as a client: the remote end is that port)."""
    return [c for c in psutil.Process(pid).net_connections(kind="tcp") if c.raddr and c.raddr.port in ports]


@pytest.mark.parametrize("colocate", [True, False], ids=["colocated", "separate"])
def test_one_process_serves_the_stack_and_calls_itself_without_a_socket(
    tmp_path: Path, stub: Stub, colocate: bool
) -> None:
    marker = new_marker()
    switch = ["++colocate=true"] if colocate else []
    gym, head = start_env([*_stack(tmp_path, stub[0]), *switch], cwd=tmp_path, marker=marker)
    try:
        records = instances(head)
        pids = {name: record["pid"] for name, record in records.items()}
        assert set(pids) == {"policy_model", "mcqa", "mcqa_simple_agent"}
        assert len(set(pids.values())) == (1 if colocate else 3)
        assert gym.pid not in pids.values()
        run = GymProcess(
            ["eval", "run", "--no-serve", "--head-url", head, "--input",
             str(EXAMPLES / "mcqa" / "example.jsonl"), "--agent", "mcqa_simple_agent", "--num-repeats", "2",
             "--output", "out/rollouts.jsonl"],
            cwd=tmp_path, marker=marker,
        )  # fmt: skip
        assert run.finish(timeout=240) == 0, run.text
        rows = [orjson.loads(line) for line in (tmp_path / "out/rollouts.jsonl").read_bytes().splitlines()]
        assert len(rows) == 10
        for row in rows:  # the stub always answers \boxed{B}: exact match decides every reward
            assert row["reward"] == float(row["expected_answer"] == "B")
            assert row["response"]["output"][-1]["content"][0]["text"] == "\\boxed{B}"
        ports = {int(records[name]["url"].rsplit(":", 1)[1]) for name in ("policy_model", "mcqa")}
        agent = pids["mcqa_simple_agent"]
        if colocate:
            assert _own_port_connections(agent, ports) == []
        else:  # the control: the agent reached its peers over TCP (keep-alive connections still open)
            assert _own_port_connections(agent, ports)
    finally:
        gym.signal(signal.SIGINT)
        code = gym.finish(timeout=60)
    assert code == 0, gym.text
    assert poll(lambda: not marked_processes(marker), timeout=30), "a server outlived gym env start"


def test_a_colocate_value_that_is_not_a_boolean_is_an_error(tmp_path: Path, stub: Stub) -> None:
    gym = GymProcess(["env", "start", *_stack(tmp_path, stub[0]), "++colocate=maybe"], cwd=tmp_path)
    assert gym.finish(timeout=60) != 0
    assert "colocate: must be true or false, got 'maybe' (from the override ++colocate=" in gym.text
    assert "ready" not in gym.text


def test_a_serving_run_hosts_the_colocated_stack_in_its_own_process(tmp_path: Path, stub: Stub) -> None:
    runner, app = stub
    app.state.mode = "hang"  # every model call waits until released
    try:
        marker = new_marker()
        gym = GymProcess(
            ["eval", "run", *_stack(tmp_path, runner), "--input", str(EXAMPLES / "mcqa" / "example.jsonl"),
             "--agent", "mcqa_simple_agent", "--output", "out/rollouts.jsonl", "++colocate=true"],
            cwd=tmp_path, marker=marker,
        )  # fmt: skip
        assert gym.wait_for("servers ready", timeout=120), gym.text
        assert poll(lambda: len(app.requests) >= 5, timeout=60)  # every rollout is inside its model call
        # The collector serves the three servers itself: no fork server, no child process at all.
        assert [proc.pid for proc in marked_processes(marker)] == [gym.pid]
        app.state.mode = "answer"
        app.released = True  # the held calls fail (503) and are retried by the model server: answered
        assert gym.finish(timeout=240) == 0, gym.text
    finally:
        app.released = True
    rows = [orjson.loads(line) for line in (tmp_path / "out/rollouts.jsonl").read_bytes().splitlines()]
    assert len(rows) == 5
    assert all(row["reward"] == float(row["expected_answer"] == "B") for row in rows)
    assert not (tmp_path / "out/logs/_fork_server.log").exists()


def _strip_volatile(row: dict[str, Any]) -> dict[str, Any]:
    """The row without what differs between any two runs: ids and times of the stub's answers, latency."""
    response = dict(row["response"])
    response.pop("id")
    response.pop("created_at")
    response["output"] = [{k: v for k, v in item.items() if k != "id"} for item in response["output"]]
    perf = {k: v for k, v in row["ng_perf"].items() if k != "total_latency_ms"}
    return row | {"response": response, "ng_perf": perf}


def test_a_colocated_run_writes_the_same_rows_as_separate_servers(tmp_path: Path, stub: Stub) -> None:
    flags = _stack(tmp_path, stub[0])
    outputs = {}
    for name, switch in (("separate", []), ("colocated", ["++colocate=true"])):
        run = GymProcess(
            ["eval", "run", *flags, "--input", str(EXAMPLES / "mcqa" / "example.jsonl"), "--agent",
             "mcqa_simple_agent", "--num-repeats", "2", "--output", f"{name}/rollouts.jsonl", *switch],
            cwd=tmp_path,
        )  # fmt: skip
        assert run.finish(timeout=240) == 0, run.text
        outputs[name] = tmp_path / name
    rows = {
        name: sorted(
            (orjson.loads(line) for line in (folder / "rollouts.jsonl").read_bytes().splitlines()),
            key=lambda row: (row["_ng_task_index"], row["_ng_rollout_index"]),
        )
        for name, folder in outputs.items()
    }
    assert len(rows["separate"]) == len(rows["colocated"]) == 10
    for separate, colocated in zip(rows["separate"], rows["colocated"], strict=True):
        assert list(separate) == list(colocated)  # the same keys in the same order
        assert _strip_volatile(separate) == _strip_volatile(colocated)
    name = "rollouts_materialized_inputs.jsonl"
    assert (outputs["separate"] / name).read_bytes() == (outputs["colocated"] / name).read_bytes()
