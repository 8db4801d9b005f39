"""Helper processes of a writer die with it, so a ``kill -9`` of a command leaves no process behind.

Contract of :func:`die_with_parent(parent_pid)`: called first thing in a forked child, it asks the kernel
to send the child SIGKILL when the thread that forked it ends (``PR_SET_PDEATHSIG``, Linux), however it
ends; if that parent is already gone (it died between the fork and this call), the child exits at once.
SIGKILL rather than SIGTERM: these helpers hold no state worth saving, and a forked copy of a Python
process may have inherited signal handlers that would not stop it.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


@functools.cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - exotic libc
        return None


def die_with_parent(parent_pid: int) -> None:
    """See the module docstring; ``parent_pid`` is the pid of the process that forked this one."""
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(1)


def prepare() -> None:
    """Load libc in the parent before forking, so the child's first call does no dynamic loading."""
    _libc()
