"""Which paths may be read as data files: regular files only, never a pipe, a device or a pseudo-file.

Contract of :func:`refuse_special_input`: a path that exists and is not a regular file or a folder — a
pipe or FIFO (``/dev/stdin`` fed by ``|``, ``<(…)``), a character or block device, a socket — or any path
under ``/dev``, ``/proc`` or ``/sys``, is a :class:`~rewardgym.errors.DataError` naming the path and
what it is. It only calls ``stat`` (opening a FIFO would block until a writer comes). Missing files and
folders are left to the caller, whose messages say so.

:func:`open_regular` opens a path for reading only when it is a regular file, judged on the opened
descriptor (``O_NONBLOCK``, so a FIFO cannot block the open, and ``fstat``, so a file swapped between a
check and the open is still caught); anything else — a FIFO, ``/dev/zero``, a folder — is a
:class:`~rewardgym.errors.DataError` naming the path and what it is, before one byte is read.

Why refuse rather than stream: every reader of a data file reads it more than once or out of order (the
collector hashes its ``--input`` for ``--resume``; the profiler reads byte ranges in parallel and
re-reads ``sample`` rows at their offsets), so a pipe would be read as empty or half-read the second
time; and the profiler writes its outputs next to ``--rollouts``, which must not be ``/dev``.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from rewardgym.errors import DataError

_PSEUDO_ROOTS = ("/dev/", "/proc/", "/sys/")
_KINDS = (
    (stat.S_ISFIFO, "a pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str | None:
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return None


def refuse_special_input(path: str | os.PathLike[str], label: str) -> None:
    """Raise a :class:`DataError` when ``path`` is not a regular file or folder (see module doc).

    ``label`` names the path in the message, e.g. ``"--input"`` or ``"Rollouts file"``."""
    name = os.fspath(path)
    try:
        info = os.stat(name)
    except OSError:
        info = None  # missing or unreadable: the caller's open() says which
    kind = _kind(info.st_mode) if info is not None else None
    absolute = os.path.abspath(name)
    if kind is None and not absolute.startswith(_PSEUDO_ROOTS):
        return
    what = kind or f"a special file (in /{absolute.split('/')[1]})"
    raise DataError(
        f"'{name}' ({label}) is {what}, not a regular file: save the data to a file first "
        "(e.g. `cat > rows.jsonl`), since it is read more than once"
    )


def open_regular(path: str | os.PathLike[str], label: str) -> BinaryIO:
    """``path`` opened for binary reading when it is a regular file (see the module docstring)."""
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except IsADirectoryError:
        raise DataError(f"'{name}' ({label}) is a folder, not a regular file") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _kind(info.st_mode) or ("a folder" if stat.S_ISDIR(info.st_mode) else "not a file")
            raise DataError(f"'{name}' ({label}) is {kind}, not a regular file: refused unread")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
