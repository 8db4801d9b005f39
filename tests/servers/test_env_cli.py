"""`gym env start | status | stop` as real processes: readiness, e2e rollout, failures, stop, secrets."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import psutil
import pytest

from tests.conftest import EXAMPLES, REPO_ROOT
from tests.stubs.client import call

API_KEY = "sk-e2e-upstream-key-987654321"

CONFIG = """\
policy_model:
  responses_api_models:
    openai_model:
      openai_base_url: ${{policy_base_url}}
      openai_api_key: ${{policy_api_key}}
      openai_model: ${{policy_model_name}}
mcqa:
  resources_servers:
    {rs_impl}:
      domain: knowledge
mcqa_simple_agent:
  responses_api_agents:
    simple_agent:
      resources_server: {{type: resources_servers, name: mcqa}}
      model_server: {{type: responses_api_models, name: policy_model}}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def gym_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"}


class Gym:
    """A running ``gym env start`` with its output collected line by line."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rewardgym", "env", "start", *args],
            cwd=cwd,
            env=gym_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, text: str, timeout: float = 60.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                return False
            self.output.append(line)
            if text in line:
                return True
        return False

    def finish(self, timeout: float = 30.0) -> int:
        code = self.proc.wait(timeout=timeout)
        self.wait_for("\0never", timeout=2)
        return code

    @property
    def text(self) -> str:
        return "".join(self.output)


def gym_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewardgym", "env", *args],
        cwd=REPO_ROOT,
        env=gym_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def pids_gone(pids: list[int], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [
            p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        ]
        if not alive:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def setup(tmp_path: Path, stub: Any) -> Iterator[dict[str, Any]]:
    runner, _ = stub
    config = tmp_path / "env.yaml"
    config.write_text(CONFIG.format(rs_impl="tests.stubs.environments:ExactMatchServer"))
    head = free_port()
    args = [
        "--config", str(config), "--model-url", f"{runner.url}/v1", "--model", "stub-model",
        "--model-api-key", API_KEY, "--log-dir", str(tmp_path / "logs"), f"++head_server.port={head}",
    ]  # fmt: skip
    started: list[Gym] = []
    yield {"args": args, "head": head, "tmp": tmp_path, "config": config, "stub": stub, "started": started}
    for gym in started:
        if gym.proc.poll() is None:
            gym.proc.kill()
            gym.proc.wait()


def start(setup: dict[str, Any], *extra: str) -> Gym:
    gym = Gym([*setup["args"], *extra], REPO_ROOT)
    setup["started"].append(gym)
    return gym


def instances(head: int) -> list[dict[str, Any]]:
    reply = call(f"http://127.0.0.1:{head}", "GET", "/server_instances")
    return list(reply.json())


def test_start_run_status_stop(setup: dict[str, Any]) -> None:
    gym = start(setup)
    assert gym.wait_for("All 3 servers ready"), gym.text
    for name in ("policy_model", "mcqa", "mcqa_simple_agent"):
        assert name in gym.text  # the instance table
    head = setup["head"]
    table = {row["name"]: row for row in instances(head)}
    assert set(table) == {"policy_model", "mcqa", "mcqa_simple_agent"}
    assert all(row["status"] == "ready" and row["pid"] for row in table.values())

    row = orjson.loads((EXAMPLES / "mcqa" / "example.jsonl").read_text().splitlines()[0])
    result = call(table["mcqa_simple_agent"]["url"], "POST", "/run", json=row)
    assert result.status == 200
    body = result.json()
    assert body["reward"] in (0.0, 1.0)
    assert body["reward"] == (1.0 if row["expected_answer"] == "B" else 0.0)  # the stub answers \boxed{B}
    assert body["extracted_answer"] == "B"
    assert body["response"]["usage"]["total_tokens"] > 0

    status = gym_cli("status", "--json", f"++head_server.port={head}")
    assert status.returncode == 0, status.stderr
    report = orjson.loads(status.stdout)
    assert report["healthy"] == 3 and report["total"] == 3

    # no secret anywhere the registry serves, nor in any log
    served = b"".join(
        call(f"http://127.0.0.1:{head}", "GET", p).body
        for p in ("/server_instances", "/health", "/supervisor")
    )
    assert API_KEY.encode() not in served
    for log in (setup["tmp"] / "logs").glob("*.log"):
        assert API_KEY not in log.read_text(), log
    assert API_KEY not in gym.text

    child_pids = [row["pid"] for row in table.values()]
    stopped = gym_cli("stop", f"++head_server.port={head}")
    assert stopped.returncode == 0, stopped.stderr
    assert "Stopped 3 servers" in stopped.stdout
    assert gym.finish() == 0
    assert pids_gone(child_pids)
    assert gym_cli("status", f"++head_server.port={head}").returncode == 1


def test_child_death_stops_everything_with_its_log(setup: dict[str, Any]) -> None:
    gym = start(setup)
    assert gym.wait_for("All 3 servers ready"), gym.text
    table = {row["name"]: row for row in instances(setup["head"])}
    os.kill(table["mcqa"]["pid"], signal.SIGKILL)
    assert gym.finish() == 1
    assert "server 'mcqa' exited unexpectedly" in gym.text
    assert "Uvicorn running on" in gym.text  # the child's last log lines
    assert "Traceback" not in gym.text
    assert pids_gone([row["pid"] for row in table.values()])


def test_children_die_with_a_killed_supervisor(setup: dict[str, Any]) -> None:
    gym = start(setup)
    assert gym.wait_for("All 3 servers ready"), gym.text
    pids = [row["pid"] for row in instances(setup["head"])]
    gym.proc.kill()
    gym.proc.wait()
    assert pids_gone(pids), "children outlived their supervisor"


def test_sigint_stops_gracefully(setup: dict[str, Any]) -> None:
    gym = start(setup)
    assert gym.wait_for("All 3 servers ready"), gym.text
    pids = [row["pid"] for row in instances(setup["head"])]
    gym.proc.send_signal(signal.SIGINT)
    assert gym.finish() == 0
    assert "All servers stopped." in gym.text
    assert pids_gone(pids)


def test_start_up_crash_prints_the_child_log(setup: dict[str, Any]) -> None:
    setup["config"].write_text(CONFIG.format(rs_impl="tests.stubs.environments:CrashingServer"))
    gym = start(setup)
    assert gym.finish(timeout=60) == 1
    assert "server 'mcqa' exited during start-up" in gym.text
    assert "cannot load the answer key" in gym.text
    assert "All 3 servers ready" not in gym.text


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("unknown_impl", "unknown resources_servers implementation 'no_such_env'"),
        ("bad_field", "mcqa.grading_mood: unknown field"),
        ("no_base_url", "openai_base_url"),
    ],
)
def test_invalid_config_is_one_clear_error(setup: dict[str, Any], edit: str, message: str) -> None:
    text = CONFIG.format(rs_impl="tests.stubs.environments:ExactMatchServer")
    if edit == "unknown_impl":
        text = text.replace("tests.stubs.environments:ExactMatchServer", "no_such_env")
    elif edit == "bad_field":
        text = text.replace("domain: knowledge", "grading_mood: strict")
    else:
        text = text.replace("      openai_base_url: ${policy_base_url}\n", "")
    setup["config"].write_text(text)
    gym = start(setup)
    assert gym.finish(timeout=60) == 1
    assert message in gym.text, gym.text
    assert "Traceback" not in gym.text
    assert API_KEY not in gym.text


def test_port_in_use(setup: dict[str, Any]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        gym = start(
            setup, f"++mcqa.resources_servers.tests\\.stubs\\.environments:ExactMatchServer.port={port}"
        )
        code = gym.finish(timeout=60)
    assert code != 0
    assert str(port) in gym.text and "Traceback" not in gym.text


def test_unreachable_upstream(setup: dict[str, Any]) -> None:
    dead = free_port()
    args = [
        a if not a.startswith("http://127.0.0.1") else f"http://127.0.0.1:{dead}/v1" for a in setup["args"]
    ]
    gym = Gym([*args, "++model_endpoint_readiness_timeout_seconds=1"], REPO_ROOT)
    setup["started"].append(gym)
    assert gym.finish(timeout=60) == 1
    assert f"model endpoint http://127.0.0.1:{dead}/v1 did not answer" in gym.text
    assert "All 3 servers ready" not in gym.text


@pytest.mark.model
@pytest.mark.slow
def test_default_embedded_model_end_to_end(tmp_path: Path) -> None:
    """`gym env start --resources-server mcqa` with no model flag runs the embedded model: a real rollout."""
    head = free_port()
    logs = tmp_path / "logs"
    low, high = 24000 + head % 1000 * 5, 24000 + head % 1000 * 5 + 400  # a range of our own
    gym = Gym(
        ["--resources-server", "mcqa", "--log-dir", str(logs), f"++head_server.port={head}",
         f"++port_range_low={low}", f"++port_range_high={high}"],
        REPO_ROOT,
    )  # fmt: skip
    try:
        assert gym.wait_for("All 3 servers ready", timeout=300), gym.text
        table = {row["name"]: row for row in instances(head)}
        assert table["policy_model"]["implementation"] == "embedded_model"

        row = orjson.loads((EXAMPLES / "mcqa" / "example.jsonl").read_text().splitlines()[0])
        row["responses_create_params"]["max_output_tokens"] = 48  # keep the 135M model's answer short
        result = call(table["mcqa_simple_agent"]["url"], "POST", "/run", json=row, timeout=180)
        assert result.status == 200, result.body
        body = result.json()
        assert body["reward"] in (0.0, 1.0)
        assert "extracted_answer" in body and body["expected_answer"] == row["expected_answer"]
        assert body["reward"] == (1.0 if body["extracted_answer"] == row["expected_answer"] else 0.0)
        usage = body["response"]["usage"]
        assert usage["input_tokens"] > 0 and 0 < usage["output_tokens"] <= 48
        assert body["response"]["model"] == "SmolLM2-135M-Instruct"
        assert (logs / "policy_model.llama.log").stat().st_size > 0

        # Every port is inside the port range, the embedded llama.cpp child's included.
        [llama] = psutil.Process(table["policy_model"]["pid"]).children()
        listening = {c.laddr.port for c in llama.net_connections("tcp") if c.status == psutil.CONN_LISTEN}
        assert listening and all(low <= port <= high for port in listening), (listening, low, high)
        assert all(low <= int(row["url"].rsplit(":", 1)[1]) <= high for row in table.values())

        # The llama.cpp child dies → the model server stops → the supervisor stops everything (exit 1).
        llama.kill()
        assert gym.finish(timeout=60) == 1
        assert "server 'policy_model' exited" in gym.text, gym.text
        assert "the embedded llama.cpp server" in gym.text and "exited with code -9" in gym.text
        assert "Traceback" not in gym.text
        assert pids_gone([row["pid"] for row in table.values()])
    finally:
        if gym.proc.poll() is None:
            gym.proc.kill()
            gym.proc.wait()
