"""The fork server (`launch.zygote` driven by `launch.forking`) with real processes."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from pathlib import Path

import psutil
import pytest

from rewardgym.launch import forking
from rewardgym.launch.child_spec import ChildSpec
from rewardgym.launch.forking import ForkServer, ForkServerError
from rewardgym.launch.probe import http_status, listening
from rewardgym.launch.supervisor import Supervisor, SupervisorOptions
from tests.conftest import REPO_ROOT

DEADLINE_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def exact_spec(name: str, log_dir: Path) -> ChildSpec:
    config = {"name": name, "host": "127.0.0.1", "port": free_port(), "log_dir": str(log_dir)}
    return ChildSpec(
        name=name,
        kind="resources_servers",
        implementation="tests.stubs.environments:ExactMatchServer",
        config=config,
    )


async def until(condition: object, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        value = condition() if callable(condition) else condition
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.fixture(autouse=True)
def children_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT)]))


async def test_forked_instances_serve_and_report_their_exit(tmp_path: Path) -> None:
    forks = ForkServer()
    await forks.start(tmp_path / "_fork_server.log")
    spec = exact_spec("exact", tmp_path)
    log = tmp_path / "exact.log"
    try:
        forked = await forks.fork(spec, log)
        zygote = psutil.Process(forked.pid).ppid()
        assert zygote != os.getpid()  # forked by the zygote, not by us
        assert os.getpgid(forked.pid) == forked.pid  # its own process group
        await until(lambda: listening("127.0.0.1", spec.port), "the forked server to listen")
        assert await http_status(f"{spec.url}/reverify_mode", 5.0) == 200
        assert forked.returncode is None
        os.killpg(forked.pid, signal.SIGTERM)
        # uvicorn stops gracefully, then re-raises the signal it captured (as with a spawned child)
        assert await asyncio.wait_for(forked.wait(), DEADLINE_S) == -signal.SIGTERM
        text = log.read_text()
        assert "Uvicorn running on" in text and "Application shutdown complete" in text
    finally:
        await forks.close()
    assert gone(zygote)
    with pytest.raises(ForkServerError):
        await forks.fork(spec, log)


async def test_instances_die_with_the_fork_server(tmp_path: Path) -> None:
    forks = ForkServer()
    await forks.start(tmp_path / "_fork_server.log")
    spec = exact_spec("exact", tmp_path)
    forked = await forks.fork(spec, tmp_path / "exact.log")
    await until(lambda: listening("127.0.0.1", spec.port), "the forked server to listen")
    zygote = psutil.Process(forked.pid).ppid()
    os.kill(zygote, signal.SIGKILL)
    assert await asyncio.wait_for(forked.wait(), DEADLINE_S) == -signal.SIGTERM
    await until(lambda: gone(forked.pid), "the orphan to die (PR_SET_PDEATHSIG)")
    await forks.close()
    with pytest.raises(ForkServerError):
        await forks.fork(spec, tmp_path / "exact.log")


async def test_a_prestarted_zygote_is_adopted(tmp_path: Path) -> None:
    forking.prestart()
    prestarted = forking._prestarted[0]
    forks = ForkServer()
    await forks.start(tmp_path / "_fork_server.log")
    try:
        assert forking._prestarted == []
        spec = exact_spec("exact", tmp_path)
        forked = await forks.fork(spec, tmp_path / "exact.log")
        assert psutil.Process(forked.pid).ppid() == prestarted.pid
        assert (tmp_path / "_fork_server.log").exists()  # its stderr now goes to the log directory
        os.killpg(forked.pid, signal.SIGTERM)
        await asyncio.wait_for(forked.wait(), DEADLINE_S)
    finally:
        await forks.close()
    assert prestarted.poll() is not None


@pytest.mark.parametrize("fork_server", [True, False])
async def test_supervisor_with_and_without_the_fork_server(tmp_path: Path, fork_server: bool) -> None:
    specs = [exact_spec("one", tmp_path), exact_spec("two", tmp_path)]
    options = SupervisorOptions(
        log_dir=tmp_path, head_port=free_port(), ready_timeout_s=DEADLINE_S, fork_server=fork_server
    )
    supervisor = Supervisor(specs, options)
    await supervisor.start()
    pids = [r.pid for r in supervisor.records()]
    assert all(pid is not None for pid in pids)
    parents = {psutil.Process(pid).ppid() for pid in pids if pid is not None}
    assert (parents == {os.getpid()}) is not fork_server  # forked by the zygote, or our own children
    os.kill(pids[1] or 0, signal.SIGKILL)
    with pytest.raises(Exception, match="server 'two' exited unexpectedly"):
        await asyncio.wait_for(supervisor.wait(), DEADLINE_S)
    assert all(gone(pid) for pid in pids if pid is not None)
    assert [r.status for r in supervisor.records()] == ["stopped", "exited"]
