"""Real-process helpers for end-to-end tests and benchmarks: ``gym`` commands, the process table, JSONL keys.

- :class:`GymProcess` runs ``python -m rewardgym <args>`` with its output (stdout + stderr) pumped line by
  line, so a test can wait for a line with a deadline and read everything printed afterwards.
- Every process started here carries ``REWARDGYM_TEST_MARKER=<marker>`` in its environment, inherited by
  all its descendants (server children, llama.cpp, sandboxes): :func:`marked_processes` finds them in the
  process table whoever their parent is now, so an orphan cannot hide by being re-parented.
- :func:`poll` waits for a condition with a deadline (no sleeps as synchronisation).
"""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import orjson
import psutil

REPO_ROOT = Path(__file__).resolve().parents[2]
MARKER_VAR = "REWARDGYM_TEST_MARKER"
T = TypeVar("T")


def new_marker() -> str:
    return f"rg-{uuid.uuid4().hex[:12]}"


def gym_environ(marker: str | None = None, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1", **extra}
    env.pop("COLUMNS", None)
    if marker is not None:
        env[MARKER_VAR] = marker
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def poll(condition: Callable[[], T], timeout: float, interval: float = 0.05) -> T:
    """The first truthy value of ``condition()`` within ``timeout`` seconds, else its last (falsy) value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


class GymProcess:
    """``python -m rewardgym <args>`` running in the background with its output collected line by line."""

    def __init__(
        self, args: list[str], *, cwd: Path, marker: str | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.args = args
        self.marker = marker
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rewardgym", *args],
            cwd=cwd,
            env=env or gym_environ(marker),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _drain(self, timeout: float) -> str | None:
        try:
            line = self._lines.get(timeout=max(0.001, timeout))
        except queue.Empty:
            return ""
        if line is not None:
            self.output.append(line)
        return line

    def wait_for(self, text: str, timeout: float = 60.0) -> bool:
        """Whether a line containing ``text`` is printed within ``timeout`` (False if the process ends)."""
        if any(text in line for line in self.output):
            return True
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self._drain(deadline - time.monotonic())
            if line is None:
                return False
            if line and text in line:
                return True
        return False

    def finish(self, timeout: float = 60.0) -> int:
        """Wait for the exit (killing it after ``timeout``) and for all its output; the exit code."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._pump.join(timeout=10)
        self._drain_all()
        return code

    def _drain_all(self) -> None:
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                return
            if line is not None:
                self.output.append(line)

    @property
    def text(self) -> str:
        self._drain_all()
        return "".join(self.output)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.running:
            self.proc.send_signal(sig)

    def kill(self) -> None:
        if self.running:
            self.proc.kill()
        self.proc.wait()


def start_env(
    args: list[str], *, cwd: Path, marker: str, ready_timeout: float = 120.0
) -> tuple[GymProcess, str]:
    """``gym env start <args>`` on a free head port, waited until ready; (process, head URL)."""
    head = free_port()
    gym = GymProcess(["env", "start", *args, f"++head_server.port={head}"], cwd=cwd, marker=marker)
    if not gym.wait_for("servers ready", timeout=ready_timeout):
        gym.kill()
        raise AssertionError(f"gym env start did not become ready:\n{gym.text}")
    return gym, f"http://127.0.0.1:{head}"


def get_json(url: str, timeout: float = 10.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return orjson.loads(reply.read())


def instances(head_url: str) -> dict[str, dict[str, Any]]:
    """The head registry's instance records by name."""
    return {r["name"]: r for r in get_json(f"{head_url}/server_instances")}


def health(head_url: str) -> dict[str, Any]:
    return dict(get_json(f"{head_url}/health"))


def marked_processes(marker: str) -> list[psutil.Process]:
    """Every live process (not a zombie) whose environment carries ``marker``."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get(MARKER_VAR) == marker and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def describe(procs: Iterable[psutil.Process]) -> str:
    parts = []
    for proc in procs:
        try:
            parts.append(f"{proc.pid} (ppid {proc.ppid()}): {' '.join(proc.cmdline())[:120]}")
        except psutil.Error:
            parts.append(str(proc.pid))
    return "; ".join(parts)


def no_marked_processes(marker: str, timeout: float = 15.0) -> list[psutil.Process]:
    """Wait until no process carries ``marker``; the survivors (empty when all are gone)."""
    survivors: list[psutil.Process] = []

    def gone() -> bool:
        survivors[:] = marked_processes(marker)
        return not survivors

    poll(gone, timeout, interval=0.1)
    return survivors


def kill_marked(marker: str) -> None:
    """Clean-up: SIGKILL every process carrying ``marker`` (only ones this test started)."""
    for proc in marked_processes(marker):
        try:
            proc.kill()
        except psutil.Error:
            continue


def jsonl_rows(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSONL file parsed strictly (an invalid line raises)."""
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def row_key(row: dict[str, Any]) -> tuple[int, int]:
    return int(row["_ng_task_index"]), int(row["_ng_rollout_index"])


def url_answers(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
