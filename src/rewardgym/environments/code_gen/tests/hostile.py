"""The hostile-solution catalogue of code_gen: what a model-written solution may try against the host.

Each :class:`Case` is a real solution sent to a running code_gen server over HTTP (``POST /verify``).
:func:`run_case` checks, for every case, what must hold under any load: HTTP 200, reward 0.0, a failure code
with a reason in ``metadata``, no secret of the host in the answer, no file of the case's marker left on the
host, the server's peak RSS grown by at most :data:`RSS_BOUND_MIB`, and ``GET /`` answering afterwards. It
does not insist on *which* limit fired first (a loaded machine may hit a time limit before a memory one).

Used by ``tests/test_hostile.py`` and by ``benchmarks/reliability/run_all.py`` (section ``sandbox``).
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.stubs.client import call

from rewardgym.environments.code_gen.tests.helpers import fenced, make_request
from rewardgym.protocol import dump

CHECKOUT = Path(__file__).resolve().parents[5]
HOST_DIRS = ("/run/lock", "/var/lock", "/tmp", "/var/tmp", "/dev/shm", "/etc", "/", str(CHECKOUT))
"""World-writable or sensitive host folders where no file of a case may appear."""

RSS_BOUND_MIB = 64
"""Largest growth of the server's peak RSS during one case (the catalogue's server reads at most
``max_output_mb`` = 4 MiB per report line; before the reader caps, a flood grew it by 800 MB+)."""

SERVER_SETTINGS = {
    "unit_test_timeout_secs": 2,
    "memory_limit_mb": 256,
    "process_memory_mb": 64,  # the whole run holds 256 MiB: 4 processes of 64 MiB (a daemon needs 3)
    "max_output_mb": 4,
    "private_tmp_mb": 16,
}
"""Limits of the catalogue's server (small, so that each case ends quickly)."""

_SCAN_PROC = """
import posix
found = []
pids = [p for p in posix.listdir('/proc') if p.isdigit()]
for pid in pids:
    for name in ('cmdline', 'environ'):
        try:
            with open('/proc/' + pid + '/' + name, 'rb') as handle:
                text = handle.read().decode('utf-8', 'replace')
        except OSError:
            continue
        if 'rgsecret-' in text:
            found.append(text[text.index('rgsecret-'):][:60])
print(found[0] if found else 'clean ' + ' '.join(sorted(pids)))
"""

_READ_FILES = """
found = []
for path in {paths!r}:
    try:
        with open(path, 'rb') as handle:
            found.append(path + ': ' + handle.read(200).decode('utf-8', 'replace'))
    except OSError:
        pass
print(found[0] if found else 'clean')
"""

_WRITE_OUTSIDE = """
import posix
written = []
for folder in {folders!r}:
    path = folder.rstrip('/') + '/{marker}'
    try:
        with open(path, 'w') as handle:
            handle.write('x')
        written.append(path)
    except OSError:
        pass
try:
    posix.mkdir('/{marker}-dir')
    written.append('/{marker}-dir')
except OSError:
    pass
outside = [p for p in written if not p.startswith(('/tmp/', '/dev/shm/', '/var/tmp/'))]
print('wrote ' + ' '.join(outside) if outside else 'contained')
"""

_MANY_FILES = """
for i in range(10 ** 6):
    open('{marker}-%d' % i, 'w').close()
print('created')
"""

_UNSHARE = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x00020000, 0x40000000
escaped = [flags for flags in (CLONE_NEWUSER, CLONE_NEWUSER | CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWNS)
           if libc.unshare(flags) == 0]
escaped += ['raw'] if libc.syscall(272, CLONE_NEWUSER) == 0 else []
if escaped:
    print('escaped', escaped)
else:
    raise OSError(ctypes.get_errno(), 'unshare refused')
"""

_FLOOD_REPORT = """
import posix
chunk = b'x' * 2 ** 20
for fd in range(3, 10):
    try:
        for _ in range(256):
            posix.write(fd, chunk)
    except OSError:
        pass
print('flooded')
"""

_FLOOD_STDERR = """
import sys
chunk = 'e' * 2 ** 20
for _ in range(1024):
    sys.stderr.write(chunk)
sys.stderr.flush()
print('flooded')
"""

_FLOOD_STDOUT = """
import posix
chunk = b'o' * 2 ** 20
for _ in range(256):
    posix.write(1, chunk)
print('o' * (64 * 2 ** 20))
"""

_DAEMON = """
import posix, time
if posix.fork() == 0:
    posix.setsid()
    if posix.fork() == 0:
        time.sleep(10 ** 6)
    posix._exit(0)
print('forked')
"""

FORKING_HOG = """
import posix
reads, pids = [], []
for _ in range(8):
    r, w = posix.pipe()
    try:
        pid = posix.fork()
    except OSError:
        break
    if pid == 0:
        held, chunks = 0, []
        try:
            while held < 128:
                chunks.append(bytearray(4 * 2**20))
                held += 4
        except MemoryError:
            pass
        posix.write(w, str(held).encode())
        posix._exit(0)
    reads.append(r)
    pids.append(pid)
total = sum(int(posix.read(r, 32) or b"0") for r in reads)
verdict = "run total within limit" if total <= 256 else "run total OVER limit"
print(verdict, "children", len(pids), "MiB", total)
"""
"""Eight children each holding up to 128 MiB: per-process limits alone let the run hold 1 GiB."""

_KILL_PARENT = """
import posix, signal
for pid in ({server_pid}, posix.getppid(), -1, 0):
    try:
        posix.kill(pid, signal.SIGKILL)
    except OSError:
        pass
print('still here')
"""

_SLEEP_UNINTERRUPTED = """
import signal, time
signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGALRM}})
time.sleep(10 ** 6)
"""


@dataclass(frozen=True)
class Case:
    name: str
    """Short name (shown in the benchmark table)."""

    code: str
    """The solution; ``{marker}``, ``{server_pid}``, ``{paths}``, ``{folders}`` are filled in."""

    expected: str = "unreachable"
    """What the test expects on stdout (the solution can only print it by breaking out)."""

    codes: tuple[int, ...] = (-2,)
    """Acceptable failure codes of the last test (several when the limit that fires first depends on load)."""

    reasons: tuple[str, ...] = ()
    """Texts of which one must appear in the failure reason (``error_message`` + ``error`` + ``output``)."""


CASES = [
    Case("read other processes' cmdline and environ", _SCAN_PROC, reasons=("clean 1",)),
    Case("read host files (checkout, env.yaml, /etc/passwd)", _READ_FILES, reasons=("clean",)),
    Case("write outside the private tmpfs", _WRITE_OUTSIDE, reasons=("contained",)),
    Case(
        "many small files", _MANY_FILES, codes=(-4, -3, -1), reasons=("No space left", "Time Limit", "Global")
    ),
    Case("create a user namespace (unshare)", _UNSHARE, codes=(-4,), reasons=("PermissionError(1,",)),
    Case("flood the report channel", _FLOOD_REPORT, codes=(-1, -4), reasons=("Output limit", "corrupted")),
    Case("flood stderr", _FLOOD_STDERR, codes=(-1,), reasons=("Output limit: more than",)),
    Case(
        "flood stdout",
        _FLOOD_STDOUT,
        codes=(-2, -4, -3),
        reasons=("larger than the sandbox", "Memory", "Time"),
    ),
    Case(
        "fork bomb",
        "import posix\nwhile True:\n    posix.fork()",
        codes=(-4, -3, -1),
        reasons=("Resource", "Time Limit", "Global"),
    ),
    Case("daemon that outlives the solution", _DAEMON, reasons=("forked",)),
    Case("forking memory hog (the run's total)", FORKING_HOG, reasons=("run total within limit",)),
    Case(
        "sleep", "import time\ntime.sleep(10 ** 6)", codes=(-3, -1), reasons=("Time Limit", "Global timeout")
    ),
    Case("sleep with the timer blocked", _SLEEP_UNINTERRUPTED, codes=(-1,), reasons=("Global timeout",)),
    Case("kill the parent and everything", _KILL_PARENT, reasons=("still here",)),
    Case(
        "memory hog",
        "chunks = []\nwhile True:\n    chunks.append(bytearray(8 * 2**20))",
        codes=(-4, -3, -1),
        reasons=("MemoryError", "Time Limit", "Global", "killed"),
    ),
]


@dataclass
class Host:
    """What the cases look for on the host: a secret in a process's argv and environment and in files."""

    secret: str
    env_yaml: Path
    decoy: subprocess.Popen[bytes]
    paths: list[str] = field(default_factory=list)


@contextmanager
def host_with_secrets() -> Iterator[Host]:
    """A host process carrying ``++auth_token=<secret>`` on its command line and in its environment, and the
    same secret in a world-readable ``env.yaml``; the positive control checks that the host can read them."""
    secret = f"rgsecret-{uuid.uuid4().hex}"
    folder = Path(tempfile.mkdtemp(prefix="rg-hostile-"))
    env_yaml = folder / "env.yaml"
    env_yaml.write_text(f"policy_api_key: {secret}\n")
    env_yaml.chmod(0o644)
    decoy = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()", f"++auth_token={secret}"],
        stdin=subprocess.PIPE,
        env={"PATH": os.defpath, "REWARDGYM_DECOY_TOKEN": secret},
    )
    try:
        # Right after a vfork-based spawn the new command line may not be in place yet: wait for it.
        deadline = time.monotonic() + 10
        while secret not in Path(f"/proc/{decoy.pid}/cmdline").read_text(errors="replace"):
            assert time.monotonic() < deadline, "the decoy's command line never showed the secret"
            time.sleep(0.01)
        assert secret in Path(f"/proc/{decoy.pid}/environ").read_text(errors="replace")
        paths = [str(env_yaml), str(CHECKOUT / "README.md"), "/etc/passwd"]
        assert all(Path(p).is_file() for p in paths)
        yield Host(secret, env_yaml, decoy, paths)
    finally:
        decoy.kill()
        decoy.wait()
        env_yaml.unlink()
        folder.rmdir()


def _peak_rss_reset() -> None:
    """Reset this process's peak RSS (``VmHWM``); the in-process server's memory is this process's."""
    Path("/proc/self/clear_refs").write_text("5")


def _peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


@dataclass
class Outcome:
    """What one case did; :attr:`problems` lists every guarantee that did not hold (empty = passed)."""

    name: str
    status: int
    reward: float | None
    result: list[Any] | None
    reason: str
    rss_growth_mib: float
    seconds: float
    problems: list[str]


def run_case(url: str, case: Case, host: Host) -> Outcome:
    """Send ``case`` to the code_gen server at ``url`` (running in this process) and check every guarantee."""
    marker = f"rg-hostile-{uuid.uuid4().hex[:12]}"
    code = case.code.format(
        marker=marker, server_pid=os.getpid(), paths=host.paths, folders=[*HOST_DIRS, os.getcwd()]
    )
    body = dump(make_request(fenced(code), ["\n"], [case.expected]))
    _peak_rss_reset()
    before = _rss_mib()
    started = time.monotonic()
    reply = call(url, "POST", "/verify", json=body, timeout=120)
    seconds = time.monotonic() - started
    growth = _peak_rss_mib() - before
    problems = []
    answer: dict[str, Any] = reply.json() if reply.status == 200 else {}
    metadata = answer.get("metadata") or {}
    reason = " ".join(str(metadata.get(k, "")) for k in ("error_message", "error", "output")).strip()
    result = answer.get("result")
    if reply.status != 200:
        problems.append(f"HTTP {reply.status}: {reply.body[:300]!r}")
    elif answer.get("reward") != 0.0:
        problems.append(f"reward {answer.get('reward')}")
    elif not result or result[-1] not in case.codes:
        problems.append(f"result {result}, expected the last code in {case.codes}")
    if not metadata.get("error_message"):
        problems.append("no reason in metadata")
    elif case.reasons and not any(text in reason for text in case.reasons):
        problems.append(f"reason {reason[:200]!r} names none of {case.reasons}")
    if host.secret in reply.body.decode("utf-8", "replace"):
        problems.append("the host's secret is in the answer")
    left = [p for d in HOST_DIRS for p in glob.glob(f"{glob.escape(d.rstrip('/'))}/{marker}*")]
    if left:
        problems.append(f"files left on the host: {left[:5]}")
    if growth > RSS_BOUND_MIB:
        problems.append(f"server peak RSS grew by {growth:.0f} MiB (bound {RSS_BOUND_MIB})")
    alive = call(url, "GET", "/", timeout=10)
    if alive.status != 200:
        problems.append(f"server unhealthy afterwards: GET / -> {alive.status}")
    return Outcome(case.name, reply.status, answer.get("reward"), result, reason, growth, seconds, problems)
