"""``gym env start --ray`` without an address (issue 22, class 8): the local cluster serves this machine
only. Every socket that listens — Ray's GCS, raylet, workers, our head registry and servers — is on
loopback, and each server's port is taken from the config's port range. Also: the command line Ray keeps
in its job table has every secret masked (class 3)."""

from __future__ import annotations

import signal
from pathlib import Path

import psutil
import pytest

from rewardgym.launch import ray_launch
from tests.stubs.processes import GymProcess, free_port, kill_marked, new_marker

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
TOKEN = "rg-local-ray-token-5c1f3a"


def test_a_local_cluster_listens_on_loopback_only(tmp_path: Path) -> None:
    marker = new_marker()
    head = free_port()
    gym = GymProcess(
        ["env", "start", "--resources-server", "mcqa", "--ray", "local", f"++head_server.port={head}",
         "++mcqa.resources_servers.mcqa.ray={num_cpus: 0}", "++port_range_low=17100",
         "++port_range_high=17199", f"++auth_token={TOKEN}"],
        cwd=tmp_path, marker=marker,
    )  # fmt: skip
    try:
        assert gym.wait_for("servers ready", timeout=300), gym.text
        root = psutil.Process(gym.proc.pid)
        processes = [root, *root.children(recursive=True)]
        assert any("gcs_server" in (p.name() or "") for p in processes), [p.name() for p in processes]
        listening = [
            (proc.name(), conn.laddr)
            for proc in processes
            for conn in proc.net_connections(kind="inet")
            if conn.status == psutil.CONN_LISTEN
        ]
        assert len(listening) >= 4  # the GCS, a raylet, the head registry, the server
        assert all(addr.ip in ("127.0.0.1", "::ffff:127.0.0.1") for _, addr in listening), listening
        url = str(instances_with_token(f"http://127.0.0.1:{head}")["mcqa"]["url"])
        host, port = url.removeprefix("http://").rsplit(":", 1)
        assert host == "127.0.0.1" and 17100 <= int(port) <= 17199, url
    finally:
        gym.signal(signal.SIGTERM)  # a graceful stop shuts the local cluster down
        gym.finish(120)
        kill_marked(marker)


def instances_with_token(head: str) -> dict[str, dict[str, object]]:
    import orjson

    from tests.stubs.client import call

    reply = call(head, "GET", "/server_instances", headers={"X-Rewardgym-Token": TOKEN})
    assert reply.status == 200, reply.body
    return {r["name"]: r for r in orjson.loads(reply.body)}


def test_ray_records_the_command_line_with_secrets_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    import ray._private.utils as ray_utils

    argv = [
        "gym",
        "env",
        "start",
        "--ray",
        "--model-api-key",
        "sk-secret-in-argv-1234",
        "++auth_token=tok-55aa77",
    ]
    monkeypatch.setattr(psutil.Process, "cmdline", lambda self: argv)
    original = ray_utils.get_entrypoint_name
    with ray_launch._entrypoint_without_secrets():
        recorded = ray_utils.get_entrypoint_name()  # type: ignore[no-untyped-call]
    assert ray_utils.get_entrypoint_name is original
    assert recorded == "gym env start --ray --model-api-key *** ++auth_token=***"
