"""The supervisor in-process with real child processes: readiness, deferred preflight, the head registry."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import psutil
import pytest

import rewardgym
from rewardgym.errors import ConfigError
from rewardgym.http.errors import UpstreamConnectionError
from rewardgym.launch.child_spec import ChildSpec, InstanceRecord
from rewardgym.launch.probe import http_status, listening
from rewardgym.launch.registry_server import HeadServer
from rewardgym.launch.serve import ThreadedServer
from rewardgym.launch.supervisor import ChildFailure, Supervisor, SupervisorOptions
from tests.conftest import REPO_ROOT
from tests.stubs.client import call


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def resources_spec(name: str, implementation: str, log_dir: Path) -> ChildSpec:
    config = {"name": name, "host": "127.0.0.1", "port": free_port(), "log_dir": str(log_dir)}
    return ChildSpec(name=name, kind="resources_servers", implementation=implementation, config=config)


@pytest.fixture
def children_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Children import the test environments: put the repository on their path."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT)]))


async def test_ready_children_skip_the_preflight(tmp_path: Path, children_env: None) -> None:
    calls: list[str] = []
    specs = [resources_spec("exact", "tests.stubs.environments:ExactMatchServer", tmp_path)]
    options = SupervisorOptions(log_dir=tmp_path, head_port=free_port(), ready_timeout_s=60)
    supervisor = Supervisor(specs, options)
    await supervisor.start(preflight=lambda: calls.append("preflight"))
    pids = [record.pid for record in supervisor.records()]
    try:
        assert calls == []  # every child validated its own config: nothing to import here
        assert [(r.name, r.status) for r in supervisor.records()] == [("exact", "ready")]
        assert await listening("127.0.0.1", specs[0].port)
        assert await http_status(f"{specs[0].url}/reverify_mode", 5.0) == 200
        assert await http_status(f"{supervisor.head_url}/server_instances", 5.0) == 200
    finally:
        await supervisor.stop()
    assert all(pid is not None and not psutil.pid_exists(pid) for pid in pids)
    assert not await listening("127.0.0.1", specs[0].port)


async def test_a_child_failing_at_start_up_runs_the_preflight(tmp_path: Path, children_env: None) -> None:
    def preflight() -> None:
        raise ConfigError("crash.some_field: not a valid setting")

    specs = [resources_spec("crash", "tests.stubs.environments:CrashingServer", tmp_path)]
    options = SupervisorOptions(log_dir=tmp_path, head_port=free_port(), ready_timeout_s=60)
    with pytest.raises(ConfigError, match=r"crash\.some_field"):
        await Supervisor(specs, options).start(preflight=preflight)

    specs = [resources_spec("crash", "tests.stubs.environments:CrashingServer", tmp_path)]
    options = SupervisorOptions(log_dir=tmp_path, head_port=free_port(), ready_timeout_s=60)
    supervisor = Supervisor(specs, options)
    with pytest.raises(ChildFailure) as failure:  # the preflight passes: the child's own failure is reported
        await supervisor.start(preflight=lambda: None)
    assert "exited during start-up" in str(failure.value)
    assert "cannot load the answer key" in str(failure.value)
    assert supervisor.records()[0].status == "exited"


async def test_probes() -> None:
    dead = free_port()
    assert not await listening("127.0.0.1", dead)
    with pytest.raises(UpstreamConnectionError) as refused:
        await http_status(f"http://127.0.0.1:{dead}/v1/models?key=secret", 2.0)
    assert not refused.value.dns_failure and "secret" not in str(refused.value)
    with pytest.raises(UpstreamConnectionError, match="unsupported URL scheme"):
        await http_status("ftp://127.0.0.1/", 2.0)
    with pytest.raises(UpstreamConnectionError, match="invalid URL"):
        await http_status("http://127.0.0.1:notaport/", 2.0)


def test_head_registry_endpoints(tmp_path: Path) -> None:
    dead = free_port()
    records = [
        InstanceRecord(
            name="gone", kind="resources_servers", implementation="x", url=f"http://127.0.0.1:{dead}"
        )
    ]
    head = HeadServer(
        {"name": "head_server", "log_dir": str(tmp_path)}, instances=lambda: records, supervisor_pid=4242
    )
    with ThreadedServer(head) as running:
        records.append(
            InstanceRecord(name="head", kind="resources_servers", implementation="y", url=running.url)
        )
        assert call(running.url, "GET", "/").json() == {"status": "ok", "name": "head_server"}
        listed: list[dict[str, Any]] = call(running.url, "GET", "/server_instances").json()
        assert [r["name"] for r in listed] == ["gone", "head"] and listed[0]["url"].endswith(str(dead))
        supervisor = call(running.url, "GET", "/supervisor").json()
        assert supervisor["pid"] == 4242 and supervisor["version"] == rewardgym.__version__
        health = call(running.url, "GET", "/health").json()
        assert health["status"] == "degraded"
        assert {s["name"]: s["healthy"] for s in health["servers"]} == {"gone": False, "head": True}
        missing = call(running.url, "GET", "/nope")
        assert missing.status == 404
        assert missing.json() == {
            "detail": "Not Found",
            "error": {"server": "HeadServer___head_server", "type": "http_error", "message": "Not Found"},
        }
        assert call(running.url, "POST", "/server_instances").status == 405
    assert "server HeadServer___head_server ready" in (tmp_path / "head_server.log").read_text()
