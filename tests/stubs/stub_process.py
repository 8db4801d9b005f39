"""A stub server run as its own process (``python -m tests.stubs.<module> --port 0 …``): started on a free
port, found by the line it prints once it listens (``<ready prefix><url>``), stopped with SIGTERM (SIGKILL
after 10 s). Shared by the stub agents and the fault upstream."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Self

ROOT = Path(__file__).resolve().parents[2]


class StubProcess:
    """A running stub process and the URL it listens on."""

    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def launch_stub(
    module: str, ready_prefix: str, args: tuple[str, ...], *, cwd: Path | None = None, timeout_s: float = 30.0
) -> tuple[subprocess.Popen[str], str]:
    """Start ``python -m tests.stubs.<module> --port 0 <args>``; (the process, its URL) once it listens."""
    proc = subprocess.Popen(
        [sys.executable, "-m", f"tests.stubs.{module}", "--port", "0", *args],
        cwd=cwd or ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    lines: list[str] = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()  # the process prints its URL first, or exits with its error
        if not line:
            break
        if line.startswith(ready_prefix):
            # Keep draining its output so a chatty process never blocks on a full pipe.
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return proc, line[len(ready_prefix) :].strip()
        lines.append(line)
    proc.kill()
    proc.wait()
    raise RuntimeError(f"{module} did not start:\n" + "".join(lines))
