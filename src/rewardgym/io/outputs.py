"""Output safety: every command that writes files goes through this module, so none destroys user data.

Contract:

- :func:`guard_outputs(outputs, inputs)` runs before a command touches anything. It refuses an output
  that is one of the command's inputs — the same path, the same file through a symbolic link
  (``realpath``) or through a hard link (same ``st_dev``/``st_ino``) — with a
  :class:`~rewardgym.errors.UsageError` (exit 2) naming both paths and the input's option, and an existing
  output that is not a regular file (a directory, a device such as ``/dev/null``, a FIFO, a socket, a
  symbolic link) with a :class:`~rewardgym.errors.DataError` (exit 1). Such a path is never unlinked,
  opened or replaced.
- One command, one ledger: inside :func:`command_files` (the ``gym`` entry point opens it around every
  command) each ``guard_outputs`` call also records its inputs, and checks its outputs against every
  input recorded so far — a sidecar guarded after the main run is still checked against the run's
  ``--input``. :func:`note_inputs` records files a command reads without writing anything yet (those it
  finds beside the given ones). As a last line, :func:`atomic_writer` and the JSONL appender refuse a
  target that is a recorded input, so no file a command writes — main output or sidecar — can replace
  one it reads, even where a caller forgot to list it up front.
- :func:`atomic_writer` / :func:`atomic_write_bytes` replace a whole file: the bytes go to a temp file in
  the target's folder, created with mode ``0o666`` so the kernel applies the umask (and default ACLs)
  exactly as for any new file; it is flushed, ``fsync``-ed and renamed over the target last. Readers see
  the old file or the whole new one. The target must be absent or a regular file.
- Every temp file and temp folder (spool) we create is named ``<label>.rgtmp-<pid>-<start>-<random>``:
  the owner's pid and its start time (``/proc/<pid>/stat``, so a reused pid is not mistaken for the
  owner). :func:`remove_stale` deletes the ones in a folder whose owner is no longer running — what a
  ``kill -9`` left behind — and never one whose owner is alive, so it is safe while other runs work in
  the same folder.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO

from rewardgym.errors import DataError, UsageError
from rewardgym.io.oserrors import output_error

MARKER = ".rgtmp-"
"""Every temp file or spool we create has this in its name (see the module docstring)."""
_NAME = re.compile(r"\.rgtmp-(\d+)-(\d+)-[0-9a-f]+$")
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


# ------------------------------------------------------------------------------------- refusing outputs
def _kind(mode: int) -> str | None:
    """What a non-regular file is, or None for a regular file."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def check_writable_target(path: Path, what: str = "output") -> None:
    """Refuse an existing ``path`` that is not a regular file (never unlinked, opened or replaced)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise DataError(f"{what} '{path}': a parent of it is a file, not a folder") from None
    kind = _kind(info.st_mode)
    if kind is not None:
        link = f" to '{os.readlink(path)}'" if stat.S_ISLNK(info.st_mode) else ""
        raise DataError(
            f"refusing to write {what} '{path}': it exists and is {kind}{link}, not a regular file "
            "(it is left untouched; choose another path)"
        )


def _identity(path: Path) -> tuple[str, tuple[int, int] | None]:
    """The resolved path and, when the file exists, its (device, inode)."""
    try:
        info = os.stat(path)
        inode: tuple[int, int] | None = (info.st_dev, info.st_ino)
    except OSError:
        inode = None
    return os.path.realpath(path), inode


_Known = tuple[Path, str, str, "tuple[int, int] | None"]
_LEDGERS: list[list[_Known]] = []
"""The inputs of the running command, innermost last (none outside :func:`command_files`: library use
keeps no ledger)."""


@contextlib.contextmanager
def command_files() -> Iterator[None]:
    """Open one command's ledger of the files it reads (see the module docstring)."""
    _LEDGERS.append([])
    try:
        yield
    finally:
        _LEDGERS.pop()


def _ledger() -> list[_Known] | None:
    return _LEDGERS[-1] if _LEDGERS else None


def _known(inputs: Iterable[tuple[Path | None, str]]) -> list[_Known]:
    return [(Path(path), what, *_identity(Path(path))) for path, what in inputs if path is not None]


def note_inputs(inputs: Iterable[tuple[Path | None, str]]) -> None:
    """Record files the running command reads (``(path, what)``; None paths are skipped)."""
    ledger = _ledger()
    if ledger is not None:
        ledger.extend(_known(inputs))


def _refuse_input(output: Path, what: str, known: Iterable[_Known]) -> None:
    real, inode = _identity(output)
    for path, option, other_real, other_inode in known:
        if real == other_real:
            same = os.path.abspath(output) == os.path.abspath(path)
            how = "" if same else " (the same file through a symbolic link)"
        elif inode is not None and inode == other_inode:
            how = " (a hard link to the same file)"
        else:
            continue
        raise UsageError(
            f"refusing to write {what} '{output}': it is the {option} file '{path}'{how}; "
            "writing it would destroy that input. Choose another output path"
        )


def refuse_recorded_input(output: Path, what: str = "output") -> None:
    """The writers' last line: refuse ``output`` when the running command recorded it as an input."""
    ledger = _ledger()
    if ledger:
        _refuse_input(output, what, ledger)


def guard_outputs(outputs: Sequence[tuple[Path, str]], inputs: Iterable[tuple[Path | None, str]]) -> None:
    """Refuse outputs that are inputs or exist as non-regular files (see the module docstring).

    ``outputs`` and ``inputs`` are ``(path, what)`` pairs; ``what`` names the option in messages. The
    inputs are recorded in the command's ledger, and the outputs checked against all it holds."""
    known = _known(inputs)
    ledger = _ledger()
    if ledger is not None:
        ledger.extend(known)
        known = ledger
    for output, what in outputs:
        _refuse_input(output, what, known)
        check_writable_target(output, what)


# ------------------------------------------------------------------------------------- temp file names
def process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, Linux), or None when it is not running."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    except OSError:  # no /proc (not Linux): only the pid is known
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return 0
    # "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ')'.
    fields = text[text.rfind(b")") + 2 :].split()
    return int(fields[19])  # field 22 (starttime), counted from field 3 (state)


def temp_name(label: str) -> str:
    """A fresh temp name for ``label`` owned by this process (see the module docstring)."""
    pid = os.getpid()
    return f"{label}{MARKER}{pid}-{process_start(pid) or 0}-{secrets.token_hex(4)}"


def owner_alive(name: str) -> bool | None:
    """Whether the process that created temp entry ``name`` still runs (None: not one of our names)."""
    match = _NAME.search(name)
    if match is None:
        return None
    pid, start = int(match[1]), int(match[2])
    current = process_start(pid)
    if current is None:
        return False
    return 0 in (start, current) or current == start  # 0: a start time that could not be read


def remove_stale(folder: Path) -> list[Path]:
    """Delete the temp files and spool folders in ``folder`` whose owner is gone; returns what went.

    Only entries that carry our marker, belong to this user and are a regular file or a real folder (not
    a symbolic link) are considered; errors (a vanished entry, another user's folder) are ignored."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    uid = os.geteuid()
    for entry in entries:
        if MARKER not in entry.name or owner_alive(entry.name) is not False:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if info.st_uid != uid:
                continue
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(entry.path)
            elif stat.S_ISREG(info.st_mode):
                os.unlink(entry.path)
            else:
                continue
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed


def make_temp_dir(folder: Path, label: str) -> Path:
    """A private (0700) temp folder named after ``label`` in ``folder``; the caller removes it."""
    path = folder / temp_name(label)
    os.mkdir(path, 0o700)
    return path


# ------------------------------------------------------------------------------------- atomic writes
def create_temp_file(target: Path) -> tuple[int, Path]:
    """An exclusive, new temp file beside ``target`` (mode 0o666 less the umask): (descriptor, path)."""
    folder = target.parent if str(target.parent) else Path(".")
    path = folder / temp_name(f".{target.name}")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except (FileNotFoundError, NotADirectoryError):
        raise DataError(f"output folder does not exist or is not a folder: '{folder}'") from None
    except PermissionError:
        raise DataError(f"output folder is not writable: '{folder}'") from None
    except OSError as exc:  # a read-only or full file system: named after the output, not the temp file
        raise output_error(exc, target) from None
    return fd, path


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """A binary handle whose content replaces ``path`` only if the block finishes without error."""
    target = Path(path)
    refuse_recorded_input(target)
    check_writable_target(target)
    fd, temp = create_temp_file(target)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        check_writable_target(target)  # still nothing else in the way: rename replaces only a file
        os.replace(temp, target)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        error = output_error(exc, target)
        if error is exc:
            raise
        raise error from None
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically."""
    with atomic_writer(path) as handle:
        handle.write(data)
