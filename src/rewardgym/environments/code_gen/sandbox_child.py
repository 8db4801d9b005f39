"""The sandboxed child of ``code_gen``: confine itself, then run one solution against all of its tests.

Started by :mod:`.sandbox` as ``python -I -B sandbox_child.py``, usually as pid 1 of fresh network/mount/pid
namespaces made by ``unshare``. Stdlib only: it loads its siblings :mod:`.lcb_execution`,
:mod:`.sandbox_root` and :mod:`.sandbox_lockdown` as top-level modules and never imports the rewardgym
package. Contract:

- **stdin**: one JSON job ``{code, fn_name, inputs, timeout, workdir, uid, root, limits, self_test?}``.
  Expected outputs are never sent: the parent compares, so the solution can neither read nor forge them.
- **Confinement**, in order: with ``root`` (namespaces) the new file system of :mod:`.sandbox_root` (only
  the interpreter's folders, read-only; a private ``/proc``; one size-capped tmpfs holding ``workdir``);
  without it (no isolation) ``workdir`` is a host folder, which the dropped uid must be able to use. Then
  ``chdir`` to the work folder, rlimits (core 0, CPU, file size, processes, address space; data/stack soft
  limits raised to 4 GiB as NeMo Gym does), ``no_new_privs``, an empty capability bounding set,
  ``setgroups([])``/``setgid``/``setuid`` to ``uid`` when running as root, no capabilities, and the seccomp
  filter of :mod:`.sandbox_lockdown` (no user namespaces). Then NeMo Gym's reliability guard, and
  :func:`.lcb_execution.run_tests`.
- **stdout is the report channel** (the solution's fd 1 goes to ``/dev/null``), one JSON object per line
  (UTF-8, at most ``limits.report_bytes`` bytes: a longer test report becomes ``output_limit``, other long
  reports have their texts cut): ``setup_error{error}`` (then exit status 3) or ``sandbox{uid, private_root,
  seccomp, exposed}``, then the lines of :func:`.lcb_execution.run_tests`. With ``self_test`` the only line
  after confinement is ``self_test{failures, ...}`` (:func:`self_test`). A process forked by the solution
  exits instead of writing a report line. Exhausting the CPU soft limit ends the process with status ``128 +
  SIGXCPU``.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import resource
import signal
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rewardgym.environments.code_gen import lcb_execution, sandbox_lockdown, sandbox_root
else:  # run as a script: load the sibling modules without importing the rewardgym package
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    import lcb_execution
    import sandbox_lockdown
    import sandbox_root

    sys.path.pop()

GUARD_MEMORY_BYTES = 4 * 1024**3
PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWUSER = 0x10000000
SHRUNK_FIELD_SHARE = 4
"""An over-long non-``ok`` report keeps each text field cut to ``report_bytes / SHRUNK_FIELD_SHARE``."""

_write, _getpid, _exit, _dumps = os.write, os.getpid, os._exit, json.dumps


class _Reporter:
    """Writes report lines to the saved fd, each at most ``limit`` bytes; a forked copy of this process exits
    instead of writing."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd = fd
        self.limit = limit
        self.pid = _getpid()

    def _encode(self, message: dict[str, Any]) -> bytes:
        # Non-ASCII stays UTF-8 (lone surrogates pass through; the parent decodes the same way).
        return (_dumps(message, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")

    def send(self, message: dict[str, Any]) -> None:
        if _getpid() != self.pid:
            _exit(0)
        line = self._encode(message)
        if len(line) > self.limit:
            line = self._encode(self._shrunk(message))
        view = memoryview(line)
        while view:
            view = view[_write(self.fd, view) :]

    def _shrunk(self, message: dict[str, Any]) -> dict[str, Any]:
        """An over-long report that still fits: a passing test's output becomes ``output_limit``, the text
        fields of anything else are cut."""
        if message.get("event") == "test" and message.get("status") == "ok":
            return {
                "event": "test",
                "index": message.get("index"),
                "seconds": message.get("seconds"),
                "status": "output_limit",
            }
        share = self.limit // SHRUNK_FIELD_SHARE
        return {k: lcb_execution.truncate(v, share) if isinstance(v, str) else v for k, v in message.items()}


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _reachable_by_others(path: str) -> bool:
    """Whether a uid that is neither owner nor group member can list ``path`` (every ancestor searchable)."""
    real = os.path.realpath(path)
    steps = [real, *(str(p) for p in Path(real).parents)]
    try:
        modes = [os.stat(step).st_mode for step in steps]
    except OSError:
        return False
    return bool(modes[0] & stat.S_IROTH) and all(mode & stat.S_IXOTH for mode in modes)


def _raise_soft(kind: int, target: int) -> None:
    soft, hard = resource.getrlimit(kind)
    if soft != resource.RLIM_INFINITY and soft < target:
        limit = target if hard == resource.RLIM_INFINITY else min(target, hard)
        resource.setrlimit(kind, (limit, hard))


def _confine(job: dict[str, Any]) -> dict[str, Any]:
    """Apply the file system, limits and identity of ``job``; returns a description for the ``sandbox``
    line."""
    if job.get("cgroup"):  # the run's cgroup (run_memory), joined before any solution code exists
        Path(job["cgroup"], "cgroup.procs").write_text(str(os.getpid()))
    workdir: str = job["workdir"]
    uid: int | None = job["uid"] if os.geteuid() == 0 else None
    root: dict[str, int] | None = job["root"]
    exposed: list[str] | None = None
    if root is not None:
        exposed = sandbox_root.build_root(root["tmp_mb"], root["tmp_inodes"], workdir, uid)
        unreachable = [p for p in exposed if not _reachable_by_others(p)]
    else:
        unreachable = [p for p in sys.path if os.path.isdir(p) and not _reachable_by_others(p)]
        if uid is not None:
            os.chown(workdir, uid, uid)
    if uid is not None and unreachable:
        raise RuntimeError(f"the interpreter's import folders {unreachable} are not readable by uid {uid}")
    os.chdir(workdir)
    limits: dict[str, int] = job["limits"]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_seconds"], limits["cpu_seconds"] + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_size_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"],) * 2)
    _raise_soft(resource.RLIMIT_DATA, GUARD_MEMORY_BYTES)
    _raise_soft(resource.RLIMIT_STACK, GUARD_MEMORY_BYTES)
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"],) * 2)
    if _libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise RuntimeError("could not set no_new_privs")
    if root is not None:  # the namespace's root: take every capability away for good
        sandbox_lockdown.drop_bounding_set()
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        if (os.getuid(), os.geteuid(), os.getgid()) != (uid, uid, uid):
            raise RuntimeError(f"could not switch to uid {uid}")
    if root is not None:
        sandbox_lockdown.drop_capabilities()
    try:
        sandbox_lockdown.forbid_user_namespaces()
        seccomp = True
    except (OSError, RuntimeError):
        if root is not None:  # isolation promised: without the filter, nothing runs
            raise
        seccomp = False  # no isolation (explicitly allowed): the filter is only a best effort
    return {"uid": os.geteuid(), "private_root": root is not None, "seccomp": seccomp, "exposed": exposed}


def self_test() -> list[str]:
    """What a confined solution could still do that it must not (empty when the confinement holds)."""
    import socket

    failures = []
    interfaces = [name for _, name in socket.if_nameindex()]
    if interfaces != ["lo"]:
        failures.append(f"network interfaces visible: {interfaces}")
    processes = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    if processes != [1]:
        failures.append(f"/proc lists other processes: {processes[:10]}")
    if os.path.exists("/etc/passwd"):
        failures.append("host files are visible (/etc/passwd)")
    try:
        with open("/rewardgym-self-test", "w"):
            failures.append("the root folder is writable")
    except OSError:
        pass
    libc = _libc()
    if libc.unshare(CLONE_NEWUSER) == 0 or ctypes.get_errno() != errno.EPERM:
        failures.append("a user namespace could be created")
    return failures


def main() -> None:
    """Read the job, confine this process, run the tests (or the self-test), report on the saved stdout."""
    job = json.loads(sys.stdin.buffer.read())
    reporter = _Reporter(os.dup(1), job["limits"]["report_bytes"])
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    try:
        sandbox = _confine(job)
    except Exception as exc:
        reporter.send({"event": "setup_error", "error": f"{type(exc).__name__}: {exc}"})
        _exit(3)
    if job.get("self_test"):
        reporter.send({"event": "self_test", "failures": self_test(), **sandbox})
        _exit(0)
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
