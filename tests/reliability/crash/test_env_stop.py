"""Stopping ``gym env start`` in every way leaves no process behind — checked in the whole process table.

Every process started here carries a marker in its environment (inherited by the server children and
anything they start), so an orphan re-parented to init is still found. Complements
``tests/servers/test_env_cli.py`` (which checks the children's pids for SIGINT and SIGKILL): adds SIGTERM,
start-up crashes, and the process-table check.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.stubs.fault_upstream import FaultUpstream, start_fault_upstream
from tests.stubs.processes import (
    GymProcess,
    free_port,
    kill_marked,
    marked_processes,
    new_marker,
    no_marked_processes,
)
from tests.stubs.reliability_stack import API_KEY, env_args

CRASHING_STACK = """\
mcqa:
  resources_servers:
    tests.stubs.environments:CrashingServer:
      domain: knowledge
mcqa_simple_agent:
  responses_api_agents:
    simple_agent:
      resources_server: {type: resources_servers, name: mcqa}
      model_server: {type: responses_api_models, name: policy_model}
"""


@pytest.fixture(scope="module")
def upstream() -> Iterator[FaultUpstream]:
    with start_fault_upstream() as running:
        yield running


@pytest.fixture
def marker() -> Iterator[str]:
    mark = new_marker()
    yield mark
    kill_marked(mark)


def start(args: list[str], cwd: Path, marker: str) -> GymProcess:
    return GymProcess(["env", "start", *args, f"++head_server.port={free_port()}"], cwd=cwd, marker=marker)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_stopping_the_supervisor_leaves_no_process(
    tmp_path: Path, upstream: FaultUpstream, marker: str, sig: signal.Signals
) -> None:
    gym = start(env_args(upstream.url, tmp_path / "logs"), tmp_path, marker)
    assert gym.wait_for("All 3 servers ready", timeout=120), gym.text
    assert len(marked_processes(marker)) >= 4  # the supervisor and its three servers (+ helpers)
    gym.signal(sig)
    code = gym.finish(timeout=60)
    if sig == signal.SIGKILL:
        assert code == -signal.SIGKILL
    else:
        assert code == 0, gym.text
        assert "All servers stopped." in gym.text
    survivors = no_marked_processes(marker, timeout=15)
    assert not survivors, f"{sig.name} left orphans: {survivors}"
    assert "Traceback" not in gym.text and API_KEY not in gym.text


def test_start_up_crash_reports_the_log_and_leaves_no_process(
    tmp_path: Path, upstream: FaultUpstream, marker: str
) -> None:
    (tmp_path / "stack.yaml").write_text(CRASHING_STACK)
    args = [
        "--config", "stack.yaml", "--model-type", "vllm_model", "--model-url", f"{upstream.url}/v1",
        "--model", "m", "--model-api-key", API_KEY, "--log-dir", str(tmp_path / "logs"),
    ]  # fmt: skip
    gym = start(args, tmp_path, marker)
    assert gym.finish(timeout=120) == 1
    assert "server 'mcqa' exited during start-up" in gym.text
    assert "cannot load the answer key" in gym.text  # its last log lines
    assert "All 3 servers ready" not in gym.text
    assert not no_marked_processes(marker, timeout=15)
