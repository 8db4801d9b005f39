"""EmbeddedLlama: real child processes — start, stop, early exit, timeout, death with the parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rewardgym.errors import ServerError
from rewardgym.models.embedded import EmbeddedLlama, LlamaServerOptions
from tests.models._http import http_json

REPO = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _wait_dead(pid: int, deadline_seconds: float) -> bool:
    deadline = time.monotonic() + deadline_seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return not _alive(pid)


def test_missing_model_file_fails_before_spawning(tmp_path: Path) -> None:
    server = EmbeddedLlama(LlamaServerOptions(tmp_path / "absent.gguf"), log_path=tmp_path / "log")
    with pytest.raises(ServerError, match=r"model file not found: .*absent\.gguf.*gym model fetch"):
        server.start()
    assert server.pid is None


def test_early_exit_raises_with_the_last_log_lines(tmp_path: Path) -> None:
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"this is not a gguf file")
    server = EmbeddedLlama(LlamaServerOptions(fake), log_path=tmp_path / "llama.log", startup_timeout=60)
    with pytest.raises(ServerError) as info:
        server.start()
    message = str(info.value)
    assert "exited during startup (exit code 1)" in message
    assert "invalid magic characters" in message  # llama.cpp's own diagnosis, from the log
    assert len(message.splitlines()) <= 31  # one summary line + at most 30 log lines
    assert not server.running


@pytest.mark.model
def test_start_serve_and_stop_cleanly(model_path: Path, tmp_path: Path) -> None:
    server = EmbeddedLlama(
        LlamaServerOptions(model_path, parallel=1, ctx_size=512, alias="smol"), log_path=tmp_path / "l"
    )
    started = time.monotonic()
    with server:
        startup = time.monotonic() - started
        assert server.running and server.pid is not None
        status, models = http_json(server.base_url + "/models")
        assert status == 200 and models["data"][0]["id"] == "smol"
        pid = server.pid
    assert server.stop() == 0  # SIGTERM handled: clean exit code; stop is idempotent
    assert _wait_dead(pid, 5.0)
    assert "stopping on SIGTERM" in (tmp_path / "l").read_text()
    assert startup < 30


@pytest.mark.model
def test_startup_deadline_stops_the_child_and_raises(model_path: Path, tmp_path: Path) -> None:
    server = EmbeddedLlama(
        LlamaServerOptions(model_path, parallel=1, ctx_size=512),
        log_path=tmp_path / "l",
        startup_timeout=0.01,
    )
    with pytest.raises(ServerError, match="did not answer GET /v1/models within"):
        server.start()
    assert server.pid is not None and _wait_dead(server.pid, 5.0)


@pytest.mark.model
def test_child_dies_with_its_parent(model_path: Path, tmp_path: Path) -> None:
    parent_code = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from rewardgym.models.embedded import EmbeddedLlama, LlamaServerOptions
        server = EmbeddedLlama(LlamaServerOptions(Path({str(model_path)!r}), parallel=1, ctx_size=512),
                               log_path=Path({str(tmp_path / "l")!r}))
        server.start()
        print(server.pid, flush=True)
        sys.stdin.read()  # block until killed
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    child_pid = 0
    try:
        assert parent.stdout is not None
        child_pid = int(parent.stdout.readline())
        assert _alive(child_pid)
        parent.send_signal(signal.SIGKILL)  # no cleanup code runs in the parent
        parent.wait(timeout=10)
        assert _wait_dead(child_pid, 10.0), "llama.cpp child outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        if child_pid and _alive(child_pid):
            os.kill(child_pid, signal.SIGKILL)


@pytest.mark.model
async def test_async_start(model_path: Path, tmp_path: Path) -> None:
    server = EmbeddedLlama(LlamaServerOptions(model_path, parallel=1, ctx_size=512), log_path=tmp_path / "l")
    try:
        base_url = await server.astart()
        assert base_url == server.base_url
        assert http_json(base_url + "/models")[0] == 200
    finally:
        server.stop()


def test_server_entry_point_rejects_a_missing_model_with_one_error_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "rewardgym.models.embedded.llama_server",
            "--model",
            str(tmp_path / "none.gguf"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: model file not found: {tmp_path / 'none.gguf'}"
