"""One collection at a time per output: an exclusive lock on the run's files, and tidying after a kill.

Contract of :func:`run_lock`:
- It takes an exclusive, non-blocking ``flock`` on ``<folder>/.<rollouts name>.lock`` for as long as the
  block runs; the kernel drops it when the process ends, however it ends (``kill -9`` included), so a stale
  lock never blocks a later run. A second ``gym eval run`` (or ``--resume``) on the same ``--output`` while
  one is running is refused with a :class:`~rewardgym.errors.UsageError` naming the holder's pid — two runs
  appending to one rollouts file would interleave their rows and duplicate keys.
- Holding the lock, it removes the temporary files (``.<name>.*.tmp``) that an atomic write of one of the
  run's outputs left behind when its process was killed mid-write: nobody else can be writing them.
- The lock file stays (hidden, a few bytes): removing it would let a third run lock a different inode.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
from collections.abc import Iterator
from pathlib import Path

from rewardgym.collect.outputs import RunOutputs
from rewardgym.errors import UsageError


def lock_path(outputs: RunOutputs) -> Path:
    return outputs.rollouts.with_name(f".{outputs.rollouts.name}.lock")


@contextlib.contextmanager
def run_lock(outputs: RunOutputs) -> Iterator[None]:
    """Hold the run's lock (see the module docstring)."""
    path = lock_path(outputs)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise UsageError(
                f"another collection (pid {holder}) is writing {outputs.rollouts}; wait for it to finish or "
                "stop it first (two runs on one output would mix their rollouts)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        remove_leftover_temp_files(outputs)
        yield
    finally:
        os.close(fd)  # releases the lock


def remove_leftover_temp_files(outputs: RunOutputs) -> list[Path]:
    """Delete temp files of interrupted atomic writes of the run's outputs; returns what was removed."""
    removed: list[Path] = []
    for target in (outputs.materialized, *outputs.stale()):
        for leftover in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
                removed.append(leftover)
    return removed
