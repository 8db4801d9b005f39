"""Secrets (docs/security.md): the API key appears nowhere; every socket is on 127.0.0.1; the shared
token is enforced.

A recognisable fake key (one no generic credential pattern masks, so only rewardgym's own bookkeeping can
hide it) sits in ``env.yaml``. Then, as real processes against the stub upstream:

- the demo: ``gym eval run`` serving ``vllm_model`` → stub, ``mcqa`` and ``simple_agent``, then
  ``gym eval profile``;
- a failing run: the upstream answers 401 *echoing the key it received* (as real providers do);
- ``gym env start ++auth_token=…`` with its head registry, ``gym env status``, ``gym config show`` and a
  ``gym eval run --no-serve ++auth_token=…`` through it.

Everything written under the working folder (outputs, logs, sidecars, fingerprints, materialized inputs),
everything printed and every head-registry answer is searched: neither the key nor the token appears. The
stub's request log proves the key was really sent upstream (the search is not vacuous).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import orjson
import psutil
import pytest
from starlette.types import Receive, Scope, Send

from tests.conftest import REPO_ROOT
from tests.servers.test_env_cli import Gym, free_port, pids_gone
from tests.stubs.client import call
from tests.stubs.openai_stub import OpenAIStub, StubState, start_stub

API_KEY = "RGCANARY7f3a9c2e5b1d4a8e6c0fQZ"
TOKEN = "rgtoken4d2b8f6a1c9e7d3b5a0f"
MCQA = REPO_ROOT / "src/rewardgym/environments/mcqa/data/example.jsonl"
AGENT = "mcqa_simple_agent"
STACK = ["--resources-server", "mcqa", "--model-type", "vllm_model"]
RUN = [*STACK, "--agent", AGENT]


def gym(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "rewardgym", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout, check=False,
    )  # fmt: skip


def write_env_yaml(folder: Path, base_url: str) -> None:
    text = f"policy_base_url: {base_url}\npolicy_api_key: {API_KEY}\npolicy_model_name: stub-model\n"
    (folder / "env.yaml").write_text(text)


def leaks(blob: str | bytes) -> list[str]:
    """Which secrets (or a 12-character piece of one) occur in ``blob``."""
    text = blob.decode("utf-8", "replace") if isinstance(blob, bytes) else blob
    found = []
    for name, secret in (("api key", API_KEY), ("auth token", TOKEN)):
        if any(secret[i : i + 12] in text for i in range(0, len(secret) - 11, 6)):
            found.append(name)
    return found


def written_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` except the env.yaml that holds the secrets on purpose."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and p.name != "env.yaml"
    }


class EchoKeyUpstream:
    """An upstream that refuses every completion with 401 and echoes the Authorization header it got."""

    def __init__(self) -> None:
        self.inner = OpenAIStub(StubState())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].endswith("/models"):
            await self.inner(cast(dict[str, Any], scope), receive, send)
            return
        auth = dict(scope["headers"]).get(b"authorization", b"").decode()
        body = orjson.dumps({"error": {"message": f"Incorrect API key provided: {auth}", "type": "auth"}})
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, OpenAIStub]]:
    runner, app = start_stub(StubState(text="\\boxed{B}"))
    try:
        yield runner.url, app
    finally:
        app.released = True
        runner.stop()


def test_demo_and_failing_run_leak_the_key_nowhere(tmp_path: Path, upstream: tuple[str, OpenAIStub]) -> None:
    from rewardgym.launch.serve import ThreadedServer

    url, stub = upstream
    demo, failing = tmp_path / "demo", tmp_path / "failing"
    printed: list[str] = []
    for folder in (demo, failing):
        folder.mkdir()
    write_env_yaml(demo, f"{url}/v1")
    run = gym("eval", "run", *RUN, "--input", str(MCQA), "--num-repeats", "2", "-o", "out/rollouts.jsonl",
              "--log-dir", "out/logs", cwd=demo)  # fmt: skip
    printed.append(run.stdout + run.stderr)
    assert run.returncode == 0, run.stdout + run.stderr
    profile = gym("eval", "profile", "--inputs", "out/rollouts_materialized_inputs.jsonl",
                  "--rollouts", "out/rollouts.jsonl", cwd=demo)  # fmt: skip
    printed.append(profile.stdout + profile.stderr)
    assert profile.returncode == 0, profile.stdout + profile.stderr
    assert len((demo / "out/rollouts.jsonl").read_bytes().splitlines()) == 10
    assert leaks((demo / "env.yaml").read_text()) == ["api key"]  # the detector sees the key where it is
    sent = {r["headers"].get("authorization") for r in stub.requests}
    assert f"Bearer {API_KEY}" in sent  # the key really went upstream: the search below is meaningful

    with ThreadedServer(EchoKeyUpstream(), name="echo-key") as echo:
        write_env_yaml(failing, f"{echo.url}/v1")
        bad = gym("eval", "run", *RUN, "--input", str(MCQA), "--limit", "2", "-o", "out/rollouts.jsonl",
                  "--log-dir", "out/logs", "++max_attempts=1", cwd=failing)  # fmt: skip
    printed.append(bad.stdout + bad.stderr)
    # The upstream refused the key (and echoed it): the run stops naming the upstream, the echo redacted.
    assert bad.returncode != 0 and "refused its credentials" in bad.stdout, bad.stdout + bad.stderr
    assert "HTTP 401" in bad.stdout and "0 succeeded, 0 failed" in bad.stdout
    assert not (failing / "out/rollouts_failures.jsonl").read_bytes()  # left for --resume, not failures
    assert not (failing / "out/rollouts.jsonl").read_bytes()  # a failure never becomes a reward

    files = {**written_files(demo), **{f"failing/{k}": v for k, v in written_files(failing).items()}}
    expected = {
        "out/rollouts_run.json",
        "out/rollouts_materialized_inputs.jsonl",
        "out/rollouts_reward_profiling.jsonl",
    }
    assert expected <= set(files) and any(name.startswith("out/logs/") for name in files)
    leaked = {name: leaks(data) for name, data in files.items() if leaks(data)}
    assert not leaked, leaked
    assert not leaks("\n".join(printed)), "a secret was printed"


@pytest.fixture(scope="module")
def started(
    tmp_path_factory: pytest.TempPathFactory, upstream: tuple[str, OpenAIStub]
) -> Iterator[dict[str, Any]]:
    """``gym env start ++auth_token=…`` with the key in env.yaml; torn down (and checked) after the module."""
    url, _ = upstream
    folder = tmp_path_factory.mktemp("env-start")
    write_env_yaml(folder, f"{url}/v1")
    head = free_port()
    gym_proc = Gym(
        [*STACK, "--log-dir", "logs", f"++head_server.port={head}", f"++auth_token={TOKEN}"], folder
    )
    try:
        assert gym_proc.wait_for("All 3 servers ready", timeout=120), gym_proc.text
        pids = [p.pid for p in psutil.Process(gym_proc.proc.pid).children(recursive=True)]
        yield {"gym": gym_proc, "folder": folder, "head": f"http://127.0.0.1:{head}"}
    finally:
        if gym_proc.proc.poll() is None:
            gym_proc.proc.terminate()  # SIGTERM: a graceful stop, exit code 0, no orphan
            assert gym_proc.finish() == 0, gym_proc.text
    assert pids_gone(pids)
    assert not leaks(gym_proc.text), "gym env start printed a secret"
    leaked = {name: leaks(data) for name, data in written_files(folder).items() if leaks(data)}
    assert not leaked, leaked  # the server logs included


def _instances(head: str) -> list[dict[str, Any]]:
    reply = call(head, "GET", "/server_instances", headers={"X-Rewardgym-Token": TOKEN})
    assert reply.status == 200, reply.body
    return list(reply.json())


def test_every_listening_socket_is_on_loopback(started: dict[str, Any]) -> None:
    supervisor = psutil.Process(started["gym"].proc.pid)
    processes = [supervisor, *supervisor.children(recursive=True)]
    assert {r["pid"] for r in _instances(started["head"])} <= {p.pid for p in processes}
    listening = [
        (proc.pid, conn.laddr)
        for proc in processes
        for conn in proc.net_connections(kind="inet")
        if conn.status == psutil.CONN_LISTEN
    ]
    assert len(listening) >= 4  # head registry + three servers
    assert all(addr.ip == "127.0.0.1" for _, addr in listening), listening


def test_servers_require_the_shared_token(started: dict[str, Any]) -> None:
    paths = {"responses_api_models": "/v1/models", "resources_servers": "/reverify_mode"}
    for record in _instances(started["head"]):
        base = record["url"]
        assert call(base, "GET", "/").status == 200  # liveness stays open, it reveals nothing
        probe = paths.get(record["kind"], "/openapi.json")
        for path in (probe, "/openapi.json"):
            assert call(base, "GET", path).status == 401, (record["name"], path)
            wrong = call(base, "GET", path, headers={"X-Rewardgym-Token": "not-the-token"})
            assert wrong.status == 401, (record["name"], path)
            bearer = call(base, "GET", path, headers={"Authorization": f"Bearer {TOKEN}"})
            assert bearer.status == 200, (record["name"], path, bearer.body[:200])
        refused = call(base, "POST", "/run" if "agents" in record["kind"] else "/verify", json={})
        assert refused.status == 401 and leaks(refused.body) == []


def test_the_head_registry_requires_the_shared_token(started: dict[str, Any]) -> None:
    for path in ("/server_instances", "/health", "/supervisor"):
        assert call(started["head"], "GET", path).status == 401, path


def test_run_through_the_registry_passes_the_token_and_nothing_leaks(started: dict[str, Any]) -> None:
    folder, head = started["folder"], started["head"]
    common = ["eval", "run", "--no-serve", "--head-url", head, "--input", str(MCQA), "--agent", AGENT]
    with_token = gym(*common, "-o", "with/rollouts.jsonl", f"++auth_token={TOKEN}", cwd=folder)
    assert with_token.returncode == 0, with_token.stdout + with_token.stderr
    assert len((folder / "with/rollouts.jsonl").read_bytes().splitlines()) == 5
    without = gym(*common, "-o", "without/rollouts.jsonl", "++max_attempts=1", cwd=folder)
    assert without.returncode != 0
    assert "requires the shared auth token" in without.stderr, without.stdout + without.stderr
    assert not (folder / "without/rollouts.jsonl").exists()

    status = gym("env", "status", "--json", "--head-url", head, cwd=folder)
    shown = gym("config", "show", *STACK, f"++auth_token={TOKEN}", cwd=folder)
    assert shown.returncode == 0, shown.stderr
    served = b"".join(
        call(head, "GET", path, headers={"X-Rewardgym-Token": TOKEN}).body
        for path in ("/server_instances", "/health", "/supervisor")
    )
    printed = "".join(p.stdout + p.stderr for p in (with_token, without, status, shown))
    assert not leaks(served), "the head registry served a secret"
    assert not leaks(printed), "a secret was printed"

    leaked = {name: leaks(data) for name, data in written_files(folder).items() if leaks(data)}
    assert not leaked, leaked
