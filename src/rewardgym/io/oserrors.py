"""Operating-system errors on data files turned into one line that names the file.

Contract:

- :class:`FileAccessError` is a :class:`~rewardgym.errors.RewardGymError` (``Error: …``, exit code 1)
  whose message is ``cannot write '<path>': No space left on device`` (or ``cannot read``/``cannot
  access``), never a traceback.
- :func:`os_error_message` formats any :class:`OSError` that way: the file it names, else ``path``; the
  verb from ``verb``, else from its errno (``ENOSPC``, ``EDQUOT``, ``EFBIG``, ``EROFS`` are write errors).
  The CLI applies it to every ``OSError`` that reaches it (:func:`rewardgym.cli.main.main`).
- :func:`writing(path)` / :func:`output_error` attach ``path`` to an error raised while writing it. A
  ``write()``, ``flush()`` or ``fsync()`` that fails (``ENOSPC`` on a full disk, ``EIO``) raises an
  ``OSError`` that names no file, and a temp file's name (``.<name>.XXXX.tmp``) means nothing to a user:
  both are reported under the output's own name. An error that names another file is kept as it is.

What was written before the error stays as it was: whole-file outputs are a temp file renamed into place
(:func:`rewardgym.io.jsonl.atomic_writer`), so the earlier version is kept; streams are appended and
flushed row by row, so at most the row being written is torn, which ``--resume`` cuts off.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator

from rewardgym.errors import RewardGymError

WRITE_ERRNOS = frozenset((errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS))
"""Errors that only writing causes."""


class FileAccessError(RewardGymError):
    """A file could not be read or written (full disk, read-only file system, I/O error …)."""

    def __init__(self, message: str, errno_: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno_
        """The operating system's error number (``errno.ENOSPC`` …)."""


def os_error_message(
    exc: OSError, path: str | os.PathLike[str] | None = None, verb: str | None = None
) -> str:
    """``cannot <verb> '<file>': <reason>`` (see module doc)."""
    name = exc.filename if exc.filename is not None else path
    reason = exc.strerror or str(exc) or type(exc).__name__
    if verb is None:
        verb = "write" if exc.errno in WRITE_ERRNOS else "access"
    if name is None:
        return f"cannot {verb} a file: {reason}"
    return f"cannot {verb} '{os.fspath(name)}': {reason}"


def _is_temp_of(filename: object, target: str) -> bool:
    """Whether ``filename`` is a temp file of :func:`~rewardgym.io.outputs.atomic_writer` for ``target``
    (``.<name>.rgtmp-<pid>-…``; ``.<name>.….tmp`` from earlier versions)."""
    if not isinstance(filename, str | bytes | os.PathLike):
        return False
    name = os.path.basename(os.fsdecode(filename))
    prefix = f".{os.path.basename(target)}."
    return name.startswith(prefix) and (name[len(prefix) :].startswith("rgtmp-") or name.endswith(".tmp"))


def output_error(exc: OSError, path: str | os.PathLike[str]) -> OSError | FileAccessError:
    """The error to raise for ``exc`` raised while writing ``path`` (see module doc)."""
    target = os.fspath(path)
    if exc.filename is None:
        if exc.errno not in WRITE_ERRNOS and exc.errno != errno.EIO:
            return exc  # not a writing error (e.g. raised by code reading an input inside the block)
        return FileAccessError(os_error_message(exc, target, "write"), exc.errno)
    if _is_temp_of(exc.filename, target):
        return FileAccessError(os_error_message(OSError(exc.errno, exc.strerror), target, "write"), exc.errno)
    return exc


@contextlib.contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[None]:
    """Report an :class:`OSError` raised inside the block as an error writing ``path`` (see module doc)."""
    try:
        yield
    except OSError as exc:
        error = output_error(exc, path)
        if error is exc:
            raise
        raise error from None
