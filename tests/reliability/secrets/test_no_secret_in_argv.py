"""No secret on any command line we create.

``gym env start`` runs a ``vllm_model`` policy whose API key comes from ``$REWARDGYM_MODEL_API_KEY`` (the
non-argv way), an embedded-model instance (so a llama.cpp child runs too), ``mcqa`` and its agent, with
``'++auth_token=${oc.env:RG_ARGV_TOKEN}'`` (the token read from gym's environment). Then every descendant
process of gym (the fork server, each server, the llama.cpp child) is read from ``/proc``: no command line
holds the key or the token, and no environment holds ``REWARDGYM_MODEL_API_KEY``, the key or the token
(children get their config on a pipe; a variable ``${oc.env:…}`` read as a secret does not linger). The
stub upstream's record proves the key did reach the wire.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.servers.test_env_cli import Gym, free_port, pids_gone
from tests.stubs.client import call
from tests.stubs.openai_stub import OpenAIStub, StubState, start_stub

API_KEY = "RGargvKEY9c2e5b1d4a8e6c0f"
TOKEN = "rgargvTOKEN4d2b8f6a1c9e7d3b"
EXTRA = """
local_model:
  responses_api_models:
    embedded_model:
      entrypoint: app.py
      parallel: 1
      ctx_size: 1024
"""


def proc_file(pid: int, name: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, OpenAIStub]]:
    runner, app = start_stub(StubState())
    try:
        yield runner.url, app
    finally:
        app.released = True
        runner.stop()


@pytest.fixture(scope="module")
def started(
    tmp_path_factory: pytest.TempPathFactory, upstream: tuple[str, OpenAIStub]
) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("argv")
    (folder / "extra.yaml").write_text(EXTRA)
    head = free_port()
    args = [
        "--resources-server", "mcqa", "--model-type", "vllm_model", "--model", "stub-model",
        "--model-url", f"{upstream[0]}/v1", "--config", "extra.yaml", "--log-dir", "logs",
        f"++head_server.port={head}", "++auth_token=${oc.env:RG_ARGV_TOKEN}",
    ]  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:  # the key reaches gym through its environment only
        patch.setenv("REWARDGYM_MODEL_API_KEY", API_KEY)
        patch.setenv("RG_ARGV_TOKEN", TOKEN)
        gym = Gym(args, folder)
    descendants: list[int] = []
    try:
        assert gym.wait_for("All 4 servers ready", timeout=180), gym.text
        descendants = [p.pid for p in psutil.Process(gym.proc.pid).children(recursive=True)]
        yield {"pid": gym.proc.pid, "head": f"http://127.0.0.1:{head}"}
    finally:
        if gym.proc.poll() is None:
            gym.proc.send_signal(signal.SIGTERM)
        assert gym.finish(timeout=60) == 0, gym.text
        assert pids_gone(descendants)


def test_no_descendant_has_a_secret_on_its_command_line(
    started: dict[str, Any], upstream: tuple[str, OpenAIStub]
) -> None:
    gym = psutil.Process(started["pid"])
    assert API_KEY.encode() not in proc_file(gym.pid, "cmdline")  # the key came from the environment
    descendants = gym.children(recursive=True)
    cmdlines = {p.pid: proc_file(p.pid, "cmdline") for p in descendants}
    joined = b"\n".join(cmdlines.values())
    # Non-vacuous: the fork server, the llama.cpp child (its own interpreter) and four servers are there.
    assert b"rewardgym.launch.zygote" in joined and b"rewardgym.models.embedded.llama_server" in joined
    assert len(descendants) >= 6, cmdlines
    for pid, cmdline in cmdlines.items():
        assert cmdline, pid  # readable: the check below is not vacuous
        assert API_KEY.encode() not in cmdline and TOKEN.encode() not in cmdline, cmdline.split(b"\0")
    for process in descendants:
        environ = proc_file(process.pid, "environ")
        assert environ, process.pid
        assert b"REWARDGYM_MODEL_API_KEY" not in environ and API_KEY.encode() not in environ, process.pid
        assert TOKEN.encode() not in environ and b"RG_ARGV_TOKEN" not in environ, process.pid

    # The key reached the model server (on its stdin) and the upstream (as a header).
    url, stub = upstream
    records = call(started["head"], "GET", "/server_instances", headers={"X-Rewardgym-Token": TOKEN}).json()
    policy = next(r["url"] for r in records if r["name"] == "policy_model")
    body = {"model": "stub-model", "input": "hi"}
    reply = call(policy, "POST", "/v1/responses", json=body, headers={"X-Rewardgym-Token": TOKEN})
    assert reply.status == 200, reply.body
    assert f"Bearer {API_KEY}" in {r["headers"].get("authorization") for r in stub.requests}, url
