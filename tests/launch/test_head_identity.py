"""The head proves itself before ``gym env stop`` signals a pid or ``--no-serve`` sends the token (issue 22,
classes 6 and 7). A decoy head is a real HTTP server on 127.0.0.1 that answers like a head registry and
names a decoy process whose command line says ``gym``; ``gym`` runs as a real process with its own
record folder (``XDG_RUNTIME_DIR``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import orjson
import pytest

from rewardgym.io.outputs import process_start
from rewardgym.launch.head_identity import proof, record_path
from rewardgym.launch.serve import ThreadedServer
from tests.conftest import REPO_ROOT

TOKEN = "rg-identity-token-7a1f39c2"


class DecoyHead:
    """Answers every head route; ``/identity`` with ``secret``'s proof (None: garbage); keeps every
    header it received."""

    def __init__(self, pid: int, secret: str | None = None) -> None:
        self.pid, self.secret = pid, secret
        self.received: list[bytes] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        self.received.extend(value for _, value in scope["headers"])
        path = scope["path"]
        if path == "/identity":
            challenge = orjson.loads(body or b"{}").get("challenge", "")
            answer: Any = {"stack": proof(self.secret, challenge, "stack") if self.secret else "0" * 64}
        elif path == "/supervisor":
            answer = {"pid": self.pid, "started_at": 0, "version": "0"}
        elif path == "/server_instances":
            answer = [
                {"name": "a", "kind": "responses_api_agents", "url": "http://127.0.0.1:9", "status": "ready"}
            ]
        else:
            answer = {"status": "ok", "name": "head_server"}
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": orjson.dumps(answer)})


@pytest.fixture
def decoy_process() -> Iterator[subprocess.Popen[bytes]]:
    """A process of this user whose command line says 'gym' (what the old check trusted)."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()", "gym", "env", "start"],
                            stdin=subprocess.PIPE)  # fmt: skip
    yield proc
    proc.kill()
    proc.wait()


def _gym(args: list[str], runtime: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "XDG_RUNTIME_DIR": str(runtime)}
    return subprocess.run(
        [sys.executable, "-m", "rewardgym", *args], env=env, cwd=runtime, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def _write_record(runtime: Path, url: str, pid: int, secret: str, start: int | None) -> None:
    folder = runtime / "rewardgym" / "heads"
    folder.mkdir(parents=True, mode=0o700)
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    path = folder / record_path(url).name
    path.write_bytes(orjson.dumps({"pid": pid, "start": start, "cmdline": cmdline, "secret": secret}))
    path.chmod(0o600)


def test_stop_signals_nothing_when_no_stack_of_ours_is_recorded(
    decoy_process: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    with ThreadedServer(cast(Any, DecoyHead(decoy_process.pid)), name="decoy-head") as decoy:
        done = _gym(["env", "stop", "--head-url", decoy.url], tmp_path)
    assert done.returncode == 1, done.stderr
    assert "no stack started on this machine by this user is recorded" in done.stderr
    assert decoy_process.poll() is None  # the decoy lives


def test_stop_signals_nothing_when_the_head_cannot_prove_the_stack_secret(
    decoy_process: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    """A stale record (a crashed stack) whose port a decoy took: the decoy cannot answer the challenge."""
    with ThreadedServer(cast(Any, DecoyHead(decoy_process.pid)), name="decoy-head") as decoy:
        _write_record(tmp_path, decoy.url, decoy_process.pid, "s" * 64, process_start(decoy_process.pid))
        done = _gym(["env", "stop", "--head-url", decoy.url], tmp_path)
    assert done.returncode == 1, done.stderr
    assert "could not prove it holds this stack's secret" in done.stderr
    assert decoy_process.poll() is None


def test_stop_signals_nothing_when_the_pid_is_not_the_one_recorded(
    decoy_process: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    """The head proves the secret, but the pid's start time is not the recorded one (a reused pid)."""
    secret = "k" * 64
    with ThreadedServer(cast(Any, DecoyHead(decoy_process.pid, secret)), name="decoy-head") as decoy:
        start = process_start(decoy_process.pid)
        assert start is not None
        _write_record(tmp_path, decoy.url, decoy_process.pid, secret, start - 1)
        done = _gym(["env", "stop", "--head-url", decoy.url], tmp_path)
    assert done.returncode == 1, done.stderr
    assert "is no longer the supervisor" in done.stderr
    assert decoy_process.poll() is None


def test_no_serve_never_sends_the_token_to_a_head_that_cannot_prove_it(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text(
        '{"responses_create_params": {"input": "q"}, "agent_ref": {"name": "a"}}\n'
    )
    head = DecoyHead(os.getpid())
    with ThreadedServer(cast(Any, head), name="decoy-head") as decoy:
        done = _gym(
            ["eval", "run", "--no-serve", "--head-url", decoy.url, "--input", "in.jsonl", "-o", "out/r.jsonl",
             f"++auth_token={TOKEN}"],
            tmp_path,
        )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "could not prove it holds the shared auth token" in done.stderr
    assert head.received and not any(TOKEN.encode() in value for value in head.received)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["status", "stop"])
def test_env_status_and_stop_never_send_the_token_to_a_head_that_cannot_prove_it(
    command: str, tmp_path: Path
) -> None:
    head = DecoyHead(os.getpid())
    with ThreadedServer(cast(Any, head), name="decoy-head") as decoy:
        done = _gym(["env", command, "--head-url", decoy.url, f"++auth_token={TOKEN}"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "could not prove it holds the shared auth token" in done.stderr
    assert head.received and not any(TOKEN.encode() in value for value in head.received)
