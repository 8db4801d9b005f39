"""The fork server: import the server stack once, then fork one process per server instance.

Every server process needs the same few hundred milliseconds of imports (FastAPI, uvicorn, pydantic models
of the wire protocol, the server base classes) before its own small part. ``python -m
rewardgym.launch.zygote`` does those imports once; each instance is then a ``fork()`` of it that only adds
its implementation module — the same idea as Android's zygote or gunicorn's ``preload_app``. The
supervisor (:mod:`rewardgym.launch.supervisor`) drives it; it falls back to spawning
``python -m rewardgym.launch.child`` per instance when the fork server is unavailable.

Protocol (one JSON object per line; the pipes are the only channel, so secrets stay off command lines,
environments and logs as with the child's stdin):
- stdin, supervisor → zygote: ``{"spec": <ChildSpec>, "log": "<path of the instance log>"}`` to fork an
  instance; ``{"stderr": "<path>"}`` to append the zygote's own stderr to that file from now on (a zygote
  started before the log directory was known); end of input → the zygote exits (its remaining children
  get SIGTERM, see below).
- stdout, zygote → supervisor: ``{"started": <name>, "pid": <pid>}`` per fork, in request order, and
  ``{"exited": <pid>, "code": <exit code, negative signal number>}`` when a forked process ends (the zygote
  is its parent and reaps it).

The zygote asks for SIGTERM when the supervisor dies (``PR_SET_PDEATHSIG``) and sits in its own process
group. A forked process puts itself in its own process group, asks for SIGTERM when the zygote dies, sends
stdin to ``/dev/null`` and stdout+stderr to its log file (appending), and then runs exactly what
``python -m rewardgym.launch.child`` runs (:func:`rewardgym.launch.child.run`). It never returns into the
zygote's loop: it ends with ``os._exit``. The zygote starts no thread and no event loop before forking, and
follows the ``gc.freeze`` recipe of the Python documentation (collector off in the zygote, frozen before
each fork, on again in the child) so that the children share the imported modules' memory pages.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import select
import signal
import sys
import traceback
from typing import Any

import orjson

PRELOAD = (
    "pydantic",
    "fastapi",
    "starlette.applications",
    "uvicorn",
    "uvicorn.config",
    "uvicorn.server",
    "uvicorn.lifespan.on",
    "uvicorn.protocols.http.httptools_impl",
    "rewardgym.servers.deadline",
    "uvicorn.loops.uvloop",
    "uvloop",
    "httptools",
    "itsdangerous",
    "rewardgym.protocol",
    "rewardgym.registry",
    "rewardgym.servers.base",
    "rewardgym.servers.resources",
    "rewardgym.servers.model",
    "rewardgym.launch.serve",
    "rewardgym.servers.logs",
    "rewardgym.launch.child",
)
"""What every server process imports, done once here (a missing optional one is skipped)."""


def preload() -> None:
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def _write(message: dict[str, Any]) -> None:
    os.write(1, orjson.dumps(message) + b"\n")


def _exit_code(status: int) -> int:
    return os.waitstatus_to_exitcode(status)


def _run_forked(request: dict[str, Any], zygote_pid: int, wakeup: tuple[int, int]) -> None:
    """In the forked process: detach, redirect, serve; never returns."""
    code = 1
    try:
        gc.enable()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in wakeup:
            os.close(fd)
        os.setpgid(0, 0)
        from rewardgym.launch.child import die_with_parent, run
        from rewardgym.launch.child_spec import ChildSpec

        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(devnull)
        os.close(log)
        die_with_parent(zygote_pid)
        code = run(ChildSpec.model_validate(request["spec"]))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _fork(request: dict[str, Any], wakeup: tuple[int, int]) -> None:
    zygote_pid = os.getpid()
    gc.freeze()  # the child's collections then never touch (and copy) the pages shared with the zygote
    pid = os.fork()
    if pid == 0:
        _run_forked(request, zygote_pid, wakeup)
    with contextlib.suppress(OSError):  # also done by the child: whichever runs first wins the race
        os.setpgid(pid, pid)
    _write({"started": request["spec"]["name"], "pid": pid})


def _redirect_stderr(path: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 2)
        os.close(fd)


def _reap() -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _write({"exited": pid, "code": _exit_code(status)})


def serve() -> int:
    """The zygote's loop: fork per request line, report exits; returns at end of input."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _sig, _frame: None)  # wakes select() through the wakeup fd
    pending = b""
    while True:
        try:
            ready, _, _ = select.select([0, wake_r], [], [])
        except InterruptedError:  # pragma: no cover - PEP 475 retries select itself
            continue
        if wake_r in ready:
            os.read(wake_r, 4096)
            _reap()
        if 0 not in ready:
            continue
        chunk = os.read(0, 65536)
        if not chunk:
            return 0
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            request = orjson.loads(line)
            if "stderr" in request:
                _redirect_stderr(request["stderr"])
            else:
                _fork(request, (wake_r, wake_w))


def main() -> int:
    from rewardgym.launch.child import die_with_parent

    parent = int(sys.argv[1]) if len(sys.argv) > 1 else None
    die_with_parent(parent)
    gc.disable()  # no collections while importing: fewer freed holes in pages the children share
    preload()
    return serve()


if __name__ == "__main__":
    sys.exit(main())
