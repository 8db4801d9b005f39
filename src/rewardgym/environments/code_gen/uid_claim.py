"""Host-wide claims on sandbox uids.

A root server runs each sandbox under its own uid (``sandbox_uid_base + slot``) so that the run's process
limit (``RLIMIT_NPROC`` counts every process of the uid on the machine) and the uid-wide kill at its end
concern that run alone. Slots are numbered per server, so two servers on one machine — replicas, test
workers, two users' jobs — would otherwise share uids: a fork bomb in one exhausts the other's process
limit, and one's clean-up kills the other's sandbox.

Contract of :func:`claim_uid`: the returned uid is held by an exclusive ``flock`` on
``<lock folder>/<uid>.lock`` until :func:`release_uid` (or the process's death: the kernel drops the lock,
so a ``kill -9`` never leaves a uid claimed). It tries ``base + preferred`` first, then the other uids
``base .. base + SEARCH - 1`` in order, and raises :class:`RuntimeError` when all are held. The lock folder
is ``/run/rewardgym-sandbox-uids`` (root only, mode 0700), or the same name in the temp folder when
``/run`` is missing. A claim costs an ``open`` and a ``flock`` (microseconds).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from pathlib import Path

SEARCH = 4096
"""How many uids above the base a server may use: far more than any machine runs sandboxes at once."""


def lock_folder() -> Path:
    """Where the uid locks live (created on first use, mode 0700)."""
    parent = Path("/run") if Path("/run").is_dir() else Path(tempfile.gettempdir())
    folder = parent / "rewardgym-sandbox-uids"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def claim_uid(base: int, preferred: int = 0) -> tuple[int, int]:
    """An unclaimed uid and the descriptor that holds its claim (see the module docstring)."""
    folder = lock_folder()
    order = (
        [preferred, *(k for k in range(SEARCH) if k != preferred)] if preferred < SEARCH else range(SEARCH)
    )
    for offset in order:
        uid = base + offset
        fd = os.open(folder / f"{uid}.lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return uid, fd
    raise RuntimeError(f"every sandbox uid {base}..{base + SEARCH - 1} is in use on this machine")


def release_uid(fd: int) -> None:
    """Give a claimed uid back (closing the descriptor drops the lock)."""
    with contextlib.suppress(OSError):
        os.close(fd)
