"""Host-wide claims on sandbox uids.

A root server runs each sandbox under its own uid (``sandbox_uid_base + slot``) so that the run's process
limit (``RLIMIT_NPROC`` counts every process of the uid on the machine) and the uid-wide kill at its end
concern that run alone. Slots are numbered per server, so two servers on one machine — replicas, test
workers, two users' jobs — would otherwise share uids: a fork bomb in one exhausts the other's process
limit, and one's clean-up kills the other's sandbox.

Contract of :func:`claim_uid`: the returned uid is held by an exclusive ``flock`` on
``<lock folder>/<uid>.lock`` until :func:`release_uid` (or the process's death: the kernel drops the lock,
so a ``kill -9`` never leaves a uid claimed). It tries ``base + preferred`` first, then the other uids
``base .. base + search - 1`` round-robin from just after the uid this process claimed last, and raises
:class:`RuntimeError` when all are held. The lock folder is ``/run/rewardgym-sandbox-uids`` (root only,
mode 0700), or the same name in the temp folder when ``/run`` is missing.

Cost: uids this process already holds are skipped without a system call, and the round-robin start means
a claim usually succeeds on its first or second ``open`` + ``flock`` (microseconds), so ``n`` claims cost
``O(n)`` system calls rather than re-probing every held uid each time (``O(n²)``: 4,096 claims once took
minutes on a loaded machine).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

SEARCH = 4096
"""How many uids above the base a server may use: far more than any machine runs sandboxes at once."""


def lock_folder() -> Path:
    """Where the uid locks live (created on first use, mode 0700)."""
    parent = Path("/run") if Path("/run").is_dir() else Path(tempfile.gettempdir())
    folder = parent / "rewardgym-sandbox-uids"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


# What this process holds (descriptor -> uid) and where its next search starts (per range): both only
# save system calls; the flock stays the one authority on who holds a uid.
_held: dict[int, int] = {}
_mine: set[int] = set()
_next: dict[tuple[int, int], int] = {}
_guard = threading.Lock()


def _order(preferred: int, start: int, search: int) -> Iterator[int]:
    """``preferred`` (when in range), then every other offset round-robin from ``start`` (lazily)."""
    first = (preferred,) if 0 <= preferred < search else ()
    rest = (k for k in itertools.chain(range(start, search), range(start)) if k != preferred)
    return itertools.chain(first, rest)


def claim_uid(base: int, preferred: int = 0, search: int = SEARCH) -> tuple[int, int]:
    """An unclaimed uid and the descriptor that holds its claim (see the module docstring)."""
    folder = lock_folder()
    with _guard:
        for offset in _order(preferred, _next.get((base, search), 0), search):
            uid = base + offset
            if uid in _mine:
                continue
            fd = os.open(folder / f"{uid}.lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            _held[fd] = uid
            _mine.add(uid)
            _next[(base, search)] = (offset + 1) % search
            return uid, fd
    raise RuntimeError(f"every sandbox uid {base}..{base + search - 1} is in use on this machine")


def release_uid(fd: int) -> None:
    """Give a claimed uid back (closing the descriptor drops the lock)."""
    with _guard:
        _mine.discard(_held.pop(fd, -1))
        with contextlib.suppress(OSError):
            os.close(fd)
