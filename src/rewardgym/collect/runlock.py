"""One collection at a time per output: an exclusive lock on the run's files, and tidying after a kill.

Contract of :func:`run_lock`:
- It takes an exclusive, non-blocking ``flock`` on ``<folder>/.<rollouts name>.lock`` for as long as the
  block runs; the kernel drops it when the process ends, however it ends (``kill -9`` included), so a stale
  lock never blocks a later run. A second ``gym eval run`` (or ``--resume``) on the same ``--output`` while
  one is running is refused with a :class:`~rewardgym.errors.UsageError` naming the holder's pid — two runs
  appending to one rollouts file would interleave their rows and duplicate keys.
- Holding the lock, it removes the temp files that interrupted writes left behind when their process was
  killed (see :func:`remove_leftover_temp_files`).
- The lock file is removed when the run ends (while still held; a waiting run that opened the removed file
  notices and locks the new one), so it is only left behind by a killed run, empty and harmless. Nothing is
  written into it — the holder's pid is read from ``/proc/locks`` — so a refused run changes no file.
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
from rewardgym.io.outputs import remove_stale


def lock_path(outputs: RunOutputs) -> Path:
    return outputs.lock


@contextlib.contextmanager
def run_lock(outputs: RunOutputs) -> Iterator[None]:
    """Hold the run's lock (see the module docstring)."""
    path = lock_path(outputs)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = lock_holder(os.fstat(fd).st_ino) or "unknown"
            os.close(fd)
            raise UsageError(
                f"another collection (pid {holder}) is writing {outputs.rollouts}; wait for it to finish or "
                "stop it first (two runs on one output would mix their rollouts)"
            ) from None
        try:
            current = os.stat(path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(fd).st_ino:
            break
        os.close(fd)  # the previous holder removed this file as we opened it: lock the one now there
    try:
        remove_leftover_temp_files(outputs)
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # still held: whoever opened this inode meanwhile sees it gone and retries
        os.close(fd)


def lock_holder(inode: int) -> str | None:
    """The pid holding an ``flock`` on the file with ``inode``, from ``/proc/locks`` (Linux), if known.

    Read from the kernel rather than written into the lock file, so that taking the lock changes no file.
    """
    try:
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    for line in table.splitlines():
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 4242 08:01:1312 0 EOF" (a blocked waiter's line has "->" after "1:")
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5].rsplit(":", 1)[-1] == str(inode):
            return fields[4]
    return None


def remove_leftover_temp_files(outputs: RunOutputs) -> list[Path]:
    """Delete what interrupted writes of the run's outputs left behind; returns what was removed.

    Every temp file of ours whose owner is gone (:func:`rewardgym.io.outputs.remove_stale`, the whole
    folder), and — safe only under the lock — the differently named temp files of earlier versions
    (``.<name>.*.tmp``, the materialization's ``.<name>.new`` and its own temp files)."""
    removed = remove_stale(outputs.rollouts.parent)
    folder = outputs.rollouts.parent
    for target in (outputs.materialized, *outputs.stale()):
        name, staged = glob.escape(target.name), glob.escape(f".{target.name}.new")
        patterns = [f".{name}.*.tmp", staged, f".{staged}.*.tmp"]
        for pattern in patterns:
            for leftover in folder.glob(pattern):
                if leftover.is_file() and not leftover.is_symlink():
                    with contextlib.suppress(FileNotFoundError):
                        leftover.unlink()
                        removed.append(leftover)
    return removed
