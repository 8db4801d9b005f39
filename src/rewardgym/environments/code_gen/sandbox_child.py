"""The sandboxed child of ``code_gen``: confine itself, then run one solution against all of its tests.

Started by :mod:`.sandbox` as ``python -I -B sandbox_child.py``, usually as pid 1 of fresh network/mount/pid
namespaces made by ``unshare``. Stdlib only: it loads its sibling :mod:`.lcb_execution` as a top-level
module and never imports the rewardgym package. Contract:

- **stdin**: one JSON job ``{code, fn_name, inputs, timeout, workdir, uid, private_tmp_mb, limits}``.
  Expected outputs are never sent: the parent compares, so the solution can neither read nor forge them.
- **Confinement**, in order: private size-limited tmpfs on ``/tmp``, ``/var/tmp`` and ``/dev/shm`` (mount
  namespace only; the work folder is recreated inside), read-only bind mounts of import folders the
  dropped uid could not reach, ``chdir`` to the work folder, rlimits (core 0, CPU, file size, processes,
  address space; data/stack soft limits raised to 4 GiB as NeMo Gym does), ``no_new_privs``, and finally
  ``setgroups([])``/``setgid``/``setuid`` to ``uid`` when running as root. Then NeMo Gym's reliability
  guard, and :func:`.lcb_execution.run_tests`.
- **stdout is the report channel** (the solution's fd 1 goes to ``/dev/null``), one JSON object per line:
  ``setup_error{error}`` (then exit status 3) or ``sandbox{uid, private_tmp, no_new_privs}``, then the
  lines of :func:`.lcb_execution.run_tests`. A process forked by the solution exits instead of writing a
  report line. Exhausting the CPU soft limit ends the process with status ``128 + SIGXCPU``.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rewardgym.environments.code_gen import lcb_execution
else:  # run as a script: load the sibling module without importing the rewardgym package
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    import lcb_execution

    sys.path.pop()

GUARD_MEMORY_BYTES = 4 * 1024**3
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 8, 32, 4096, 16384
PR_SET_NO_NEW_PRIVS = 38
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
EXPOSED_PATHS = "/tmp/.rewardgym-python"

_write, _getpid, _exit, _dumps = os.write, os.getpid, os._exit, json.dumps


class _Reporter:
    """Writes report lines to the saved fd; a forked copy of this process exits instead of writing."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pid = _getpid()

    def send(self, message: dict[str, Any]) -> None:
        if _getpid() != self.pid:
            _exit(0)
        view = memoryview((_dumps(message) + "\n").encode("utf-8", "surrogatepass"))
        while view:
            view = view[_write(self.fd, view) :]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _private_tmp(size_mb: int, workdir: str) -> bool:
    """Mount private tmpfs on the world-writable folders; recreate ``workdir`` inside when it lives there."""
    libc = _libc()
    flags = ctypes.c_ulong(MS_NOSUID | MS_NODEV | MS_NOEXEC)
    options = f"size={size_mb}m,mode=1777".encode()
    targets = [d for d in PRIVATE_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    mounted = [d for d in targets if libc.mount(b"tmpfs", d.encode(), b"tmpfs", flags, options) == 0]
    if any(workdir.startswith(d + "/") for d in mounted):
        os.makedirs(workdir, mode=0o700, exist_ok=True)
    return mounted == targets


def _reachable_by_others(path: str) -> bool:
    """Whether a uid that is neither owner nor group member can list ``path`` (every ancestor searchable)."""
    real = os.path.realpath(path)
    steps = [real, *(str(p) for p in Path(real).parents)]
    try:
        modes = [os.stat(step).st_mode for step in steps]
    except OSError:
        return False
    return bool(modes[0] & stat.S_IROTH) and all(mode & stat.S_IXOTH for mode in modes)


def _expose_import_paths() -> bool:
    """Read-only bind mounts of the ``sys.path`` folders a dropped uid could not reach (e.g. an interpreter
    under ``/root``) into the private ``/tmp``; ``sys.path`` and the ``__path__`` of the packages already
    imported (``encodings`` …) are pointed at them. Needs the mount namespace."""
    libc = _libc()
    moved: dict[str, str] = {}
    for index, entry in enumerate(sys.path):
        if not os.path.isdir(entry) or _reachable_by_others(entry):
            continue
        target = f"{EXPOSED_PATHS}/{index}"
        os.makedirs(target, mode=0o755)
        os.chmod(EXPOSED_PATHS, 0o755)
        if libc.mount(entry.encode(), target.encode(), None, ctypes.c_ulong(MS_BIND | MS_REC), None) != 0:
            return False
        flags = ctypes.c_ulong(MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        if libc.mount(None, target.encode(), None, flags, None) != 0:
            return False
        sys.path[index] = target
        moved[entry.rstrip("/") + "/"] = target + "/"

    def relocate(path: str) -> str:
        for old, new in moved.items():
            if path.startswith(old):
                return new + path[len(old) :]
        return path

    for module in list(sys.modules.values()):
        search = getattr(module, "__path__", None)
        if isinstance(search, list):
            search[:] = [relocate(p) for p in search]
    sys.path_importer_cache.clear()
    return True


def _raise_soft(kind: int, target: int) -> None:
    soft, hard = resource.getrlimit(kind)
    if soft != resource.RLIM_INFINITY and soft < target:
        limit = target if hard == resource.RLIM_INFINITY else min(target, hard)
        resource.setrlimit(kind, (limit, hard))


def _confine(job: dict[str, Any]) -> dict[str, Any]:
    """Apply the folder, limits and identity of ``job``; returns a description for the ``ready`` line."""
    workdir: str = job["workdir"]
    uid: int | None = job["uid"] if os.geteuid() == 0 else None
    private = bool(job["private_tmp_mb"]) and _private_tmp(int(job["private_tmp_mb"]), workdir)
    unreachable = uid is not None and not all(_reachable_by_others(p) for p in sys.path if os.path.isdir(p))
    if unreachable and not (private and _expose_import_paths()):
        raise RuntimeError(
            f"the interpreter's import paths are not readable by uid {uid} and cannot be exposed "
            "without a mount namespace"
        )
    if uid is not None:
        os.chown(workdir, uid, uid)
    os.chdir(workdir)
    limits: dict[str, int] = job["limits"]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_seconds"], limits["cpu_seconds"] + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_size_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"],) * 2)
    _raise_soft(resource.RLIMIT_DATA, GUARD_MEMORY_BYTES)
    _raise_soft(resource.RLIMIT_STACK, GUARD_MEMORY_BYTES)
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"],) * 2)
    no_new_privs = _libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        if (os.getuid(), os.geteuid(), os.getgid()) != (uid, uid, uid):
            raise RuntimeError(f"could not switch to uid {uid}")
    return {"uid": os.geteuid(), "private_tmp": private, "no_new_privs": no_new_privs}


def main() -> None:
    """Read the job, confine this process, run the tests, report on the saved stdout."""
    job = json.loads(sys.stdin.buffer.read())
    reporter = _Reporter(os.dup(1))
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    try:
        sandbox = _confine(job)
    except Exception as exc:
        reporter.send({"event": "setup_error", "error": f"{type(exc).__name__}: {exc}"})
        _exit(3)
    sys.set_int_max_str_digits(lcb_execution.INT_MAX_STR_DIGITS)
    signal.signal(signal.SIGALRM, lcb_execution.on_alarm)
    # The CPU soft limit ends the run with a status the parent can name (unshare passes exit codes on).
    signal.signal(signal.SIGXCPU, lambda signum, frame: _exit(128 + signal.SIGXCPU))
    lcb_execution.reliability_guard()
    reporter.send({"event": "sandbox", **sandbox})
    lcb_execution.run_tests(job, reporter.send)
    _exit(0)


if __name__ == "__main__":
    main()
