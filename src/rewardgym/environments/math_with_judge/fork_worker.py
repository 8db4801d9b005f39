"""The fork helper program behind :mod:`.killable` (run as ``python -m <this module> [preload modules]``).

Contract:

- The helper is a single-threaded process, so forking it is always safe. It imports the modules named on its
  command line once (e.g. math-verify plus a warm-up), so every job's child starts warm.
- Protocol: one JSON object per line. Requests on stdin ``{"id", "func": "module:qualname", "args": [...],
  "timeout_s"}``; replies on stdout ``{"id", "value", "failure", "detail", "pid"}`` where ``failure`` is null,
  ``"timeout"``, ``"crashed"`` (no result or a non-zero exit) or ``"error"`` (the function raised).
- Each job runs ``func(*args)`` in its own forked child; at ``timeout_s`` the child gets SIGKILL. Children
  always end with ``os._exit`` and are always reaped. Jobs run concurrently.
- stdout is reserved for replies: file descriptors 1 and 2 point at /dev/null for the helper and its children.
- Start-up: after the imports the helper writes ``{"ready": true, "pid"}``, or ``{"ready": false, "detail"}``
  and exits 1 when an import failed (so a missing dependency is an error, not a stream of zero rewards).
- The helper ignores SIGINT and exits (killing its children) when stdin reaches EOF, i.e. when its parent
  closes the pipe or dies.
"""

from __future__ import annotations

import importlib
import json
import os
import selectors
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any

MAX_REPLY_BYTES = 4 * 1024 * 1024
"""A job result larger than this (JSON) is reported as an error instead of being sent."""

_CHUNK = 65536


@dataclass
class _Job:
    job_id: Any
    pid: int
    fd: int
    deadline: float
    chunks: list[bytes] = field(default_factory=list)
    timed_out: bool = False


def resolve(reference: str) -> Any:
    """The object named ``"module:qualname"``."""
    module_name, _, qualname = reference.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _child(request: dict[str, Any], write_fd: int) -> None:
    """Runs in the forked child: compute, send one JSON document, exit. Never returns."""
    code = 0
    try:
        try:
            reply: dict[str, Any] = {"value": resolve(request["func"])(*request.get("args", []))}
        except BaseException as exc:
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        payload = json.dumps(reply).encode()
        if len(payload) > MAX_REPLY_BYTES:
            payload = json.dumps({"error": f"result too large ({len(payload)} bytes)"}).encode()
        _write_all(write_fd, payload)
    except BaseException:
        code = 1
    finally:
        os._exit(code)


class _Helper:
    def __init__(self, reply_fd: int) -> None:
        self.reply_fd = reply_fd
        self.selector = selectors.DefaultSelector()
        self.jobs: dict[int, _Job] = {}
        self.pending = b""

    def reply(
        self, job_id: Any, pid: int | None, value: Any = None, failure: str | None = None, detail: str = ""
    ) -> None:
        message = {"id": job_id, "value": value, "failure": failure, "detail": detail, "pid": pid}
        _write_all(self.reply_fd, json.dumps(message).encode() + b"\n")

    def start(self, line: bytes) -> None:
        try:
            request = json.loads(line)
            timeout_s = float(request["timeout_s"])
        except (ValueError, KeyError, TypeError) as exc:
            self.reply(None, None, failure="error", detail=f"bad request: {exc}")
            return
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            os.close(self.reply_fd)
            _child(request, write_fd)
        os.close(write_fd)
        job = _Job(request.get("id"), pid, read_fd, time.monotonic() + max(timeout_s, 0.0))
        self.jobs[read_fd] = job
        self.selector.register(read_fd, selectors.EVENT_READ, job)

    def finish(self, job: _Job) -> None:
        self.selector.unregister(job.fd)
        os.close(job.fd)
        del self.jobs[job.fd]
        _, status = os.waitpid(job.pid, 0)
        if job.timed_out:
            self.reply(job.job_id, job.pid, failure="timeout")
            return
        payload = b"".join(job.chunks)
        if not payload or os.waitstatus_to_exitcode(status) != 0:
            self.reply(job.job_id, job.pid, failure="crashed")
            return
        try:
            result = json.loads(payload)
        except ValueError:
            self.reply(job.job_id, job.pid, failure="crashed")
            return
        if "error" in result:
            self.reply(job.job_id, job.pid, failure="error", detail=str(result["error"]))
        else:
            self.reply(job.job_id, job.pid, value=result["value"])

    def expire(self) -> None:
        now = time.monotonic()
        for job in self.jobs.values():
            if not job.timed_out and now >= job.deadline:
                job.timed_out = True
                os.kill(job.pid, signal.SIGKILL)

    def shutdown(self) -> None:
        for job in list(self.jobs.values()):
            os.kill(job.pid, signal.SIGKILL)
            os.waitpid(job.pid, 0)

    def serve(self) -> None:
        self.selector.register(0, selectors.EVENT_READ, None)
        while True:
            live = [job.deadline for job in self.jobs.values() if not job.timed_out]
            wait = max(min(live) - time.monotonic(), 0.0) if live else None
            for key, _ in self.selector.select(wait):
                if key.data is None:
                    data = os.read(0, _CHUNK)
                    if not data:
                        self.shutdown()
                        return
                    self.pending += data
                    while b"\n" in self.pending:
                        line, self.pending = self.pending.split(b"\n", 1)
                        if line.strip():
                            self.start(line)
                else:
                    job: _Job = key.data
                    chunk = os.read(job.fd, _CHUNK)
                    if chunk:
                        job.chunks.append(chunk)
                    else:
                        self.finish(job)
            self.expire()


def main(argv: list[str]) -> int:
    """Serve jobs until stdin closes; ``argv`` names modules to import first."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    reply_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    try:
        for module in argv:
            importlib.import_module(module)
    except BaseException as exc:
        _write_all(
            reply_fd, json.dumps({"ready": False, "detail": f"{type(exc).__name__}: {exc}"}).encode() + b"\n"
        )
        return 1
    _write_all(reply_fd, json.dumps({"ready": True, "pid": os.getpid()}).encode() + b"\n")
    _Helper(reply_fd).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
