"""Writing one file from several processes at once, in place: no part files, no copying.

Contract of :func:`write_pieces(handle, pieces, produce, processes, meanwhile)`:

- the file (empty on entry) becomes the concatenation of ``pieces`` consecutive pieces; ``produce(k)``
  returns the bytes of piece ``k`` and is called once, in the process that takes ``k``;
- ``processes`` processes take pieces in order from a shared queue (a pipe holding the piece numbers):
  this one and ``processes - 1`` children forked from it (they see everything this process computed,
  copy-on-write). This process first runs ``meanwhile()`` (work that must not wait for the file, e.g.
  statistics the other outputs need) and joins in after; whoever is free takes the next piece, so the
  processes finish together whatever else runs on the machine;
- every process tells each other process the length of every piece it produced as soon as it has it
  (16-byte messages, one pipe per process), and writes a piece with ``os.pwrite`` at its final offset as
  soon as the lengths of all earlier pieces are known — so at most a few pieces wait in memory and
  nothing is written twice;
- the children die with this process (``PR_SET_PDEATHSIG``): a ``kill -9`` of it leaves no writer
  running;
- on return ``handle`` is positioned at the end of the file. A failure in any process (an exception in
  ``produce``, a write error, a process that dies) raises here — an :class:`OSError` with its errno,
  anything else as :class:`PieceWriteError` with the child's message — after every child has stopped, so
  the caller's temp-file handling can remove the partial file;
- written ranges are handed to the kernel for write-back as the writing proceeds
  (``posix_fadvise(DONTNEED)``), so the file's pages do not pile up in memory and the caller's final
  ``fsync`` finds little left to do.

``produce`` runs in forked children: it must not rely on a file offset shared with other processes (a
forked file descriptor shares its offset with the parent's) — read with ``os.pread``, or open files per
process.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import struct
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import IO, TypeVar

from rewardgym.io import children

_MESSAGE = struct.Struct("<qq")
"""(piece, length); a failure is (-1 - errno, message length) followed by the message."""
_PIECE = struct.Struct("<q")
MAX_PIECES = 2048
"""At most this many pieces: their numbers (8 bytes each) and lengths (16 bytes each) fit a pipe's
64 KiB, so no process ever waits to write to one."""
_ADVISE_EVERY = 32 << 20
"""Bytes written between two write-back hints."""

_T = TypeVar("_T")
Watch = dict[int, Callable[[], bool]]
"""Sentinels of the other processes, each with a check: True when it ended normally, else it raises."""


class PieceWriteError(RuntimeError):
    """A writing process failed (its message is carried over)."""


def advise_write_back(fd: int) -> None:
    """Start write-back of the file's dirty pages and drop its clean ones from the page cache."""
    if hasattr(os, "posix_fadvise"):
        with contextlib.suppress(OSError):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


class _Peers:
    """One process's link to the others: the lengths it knows, what it tells and what it hears."""

    def __init__(self, inbound: int, outbound: list[int], pieces: int) -> None:
        self.inbound = inbound
        self.outbound = outbound
        self.lengths: list[int | None] = [None] * pieces
        self._buffer = b""

    def tell(self, piece: int, length: int) -> None:
        self.lengths[piece] = length
        message = _MESSAGE.pack(piece, length)
        for fd in self.outbound:
            os.write(fd, message)

    def fail(self, exc: BaseException) -> None:
        text = f"{type(exc).__name__}: {exc}".encode(errors="replace")[:2048]
        if isinstance(exc, OSError) and exc.errno:
            text, code = (exc.strerror or str(exc)).encode(errors="replace")[:2048], exc.errno
        else:
            code = 0
        message = _MESSAGE.pack(-1 - code, len(text)) + text
        for fd in self.outbound:
            with contextlib.suppress(OSError):
                os.write(fd, message)

    def receive(self) -> bool:
        """Read what has arrived (call when the pipe is readable); False at end of file."""
        data = os.read(self.inbound, 1 << 16)
        if not data:
            return False
        buffer = self._buffer + data
        size = _MESSAGE.size
        while len(buffer) >= size:
            piece, length = _MESSAGE.unpack_from(buffer)
            if piece >= 0:
                self.lengths[piece] = length
                buffer = buffer[size:]
                continue
            if len(buffer) < size + length:
                break
            text = buffer[size : size + length].decode(errors="replace")
            if piece < -1:
                raise OSError(-1 - piece, text)
            raise PieceWriteError(text)
        self._buffer = buffer
        return True

    def drain(self) -> None:
        """Read everything that has already arrived."""
        while wait([self.inbound], timeout=0) and self.receive():
            pass


def _take(queue: int) -> int | None:
    """The next piece nobody has taken yet (None: all are taken)."""
    try:
        data = os.read(queue, _PIECE.size)
    except BlockingIOError:
        return None
    return _PIECE.unpack(data)[0] if data else None


def _run(fd: int, queue: int, produce: Callable[[int], bytes], peers: _Peers, watch: Watch) -> None:
    """Take, produce, announce and write pieces until none are left (see module doc)."""
    lengths = peers.lengths
    pending: dict[int, bytes] = {}
    offsets = [0]  # offsets[k]: where piece k starts, for every k whose earlier pieces' lengths are known
    unadvised = 0

    def settle() -> None:
        nonlocal unadvised
        known = len(offsets) - 1
        while known < len(lengths) and (length := lengths[known]) is not None:
            offsets.append(offsets[known] + length)
            known += 1
        for piece in [p for p in pending if p <= known]:
            view, position = memoryview(pending.pop(piece)), offsets[piece]
            unadvised += len(view)
            while view:
                written = os.pwrite(fd, view, position)
                view, position = view[written:], position + written
        if unadvised >= _ADVISE_EVERY:
            advise_write_back(fd)
            unadvised = 0

    while (piece := _take(queue)) is not None:
        data = produce(piece)
        peers.tell(piece, len(data))
        pending[piece] = data
        peers.drain()
        settle()
    while pending:
        ready = wait([peers.inbound, *watch])
        if peers.inbound in ready:
            if not peers.receive():
                raise PieceWriteError("the other writing processes stopped")
            settle()
            continue
        for sentinel in ready:
            peers.drain()  # a process that failed reported why before it ended
            if isinstance(sentinel, int) and watch[sentinel]():
                del watch[sentinel]  # ended normally: it told every length first
        settle()
    if unadvised:
        advise_write_back(fd)


def _child(fd: int, queue: int, produce: Callable[[int], bytes], peers: _Peers, parent_pid: int) -> None:
    """A forked writer: its pieces, then exit (status 1 after reporting a failure to the others). It dies
    with the process that forked it, whatever kills that one."""
    children.die_with_parent(parent_pid)

    def parent_gone() -> bool:
        raise PieceWriteError("the main process stopped")

    parent = multiprocessing.parent_process()
    watch: Watch = {parent.sentinel: parent_gone} if parent is not None else {}
    try:
        _run(fd, queue, produce, peers, watch)
    except BaseException as exc:
        peers.fail(exc)
        os._exit(1)


def write_pieces(
    handle: IO[bytes],
    pieces: int,
    produce: Callable[[int], bytes],
    processes: int,
    meanwhile: Callable[[], _T],
) -> _T:
    """Write ``pieces`` pieces into ``handle``'s empty file from ``processes`` processes and return what
    ``meanwhile()`` returns, which runs here once the children have started (see module doc)."""
    handle.flush()
    if handle.tell() != 0:
        raise ValueError("write_pieces writes a file from its start")
    if not 0 < pieces <= MAX_PIECES:
        raise ValueError(f"write_pieces writes 1 to {MAX_PIECES} pieces, not {pieces}")
    fd = handle.fileno()
    processes = max(1, min(processes, pieces))
    pipes = [os.pipe() for _ in range(processes)]
    queue, queue_in = os.pipe()  # the pieces nobody has taken yet, one 8-byte number each
    os.write(queue_in, b"".join(_PIECE.pack(piece) for piece in range(pieces)))
    os.close(queue_in)
    os.set_blocking(queue, False)

    def peers_of(rank: int) -> _Peers:
        return _Peers(pipes[rank][0], [w for i, (_, w) in enumerate(pipes) if i != rank], pieces)

    context = multiprocessing.get_context("fork")
    writers: list[multiprocessing.process.BaseProcess] = []
    children.prepare()
    try:
        for rank in range(1, processes):
            started = context.Process(
                target=_child, args=(fd, queue, produce, peers_of(rank), os.getpid()), daemon=True
            )
            started.start()
            writers.append(started)

        def check(child: multiprocessing.process.BaseProcess) -> Callable[[], bool]:
            def ended_normally() -> bool:
                child.join()
                if child.exitcode != 0:
                    raise PieceWriteError(f"a writing process ended with exit code {child.exitcode}")
                return True

            return ended_normally

        peers = peers_of(0)
        result = meanwhile()
        _run(fd, queue, produce, peers, {c.sentinel: check(c) for c in writers})
        for child in writers:
            child.join()
            if child.exitcode != 0:
                peers.drain()
                raise PieceWriteError(f"a writing process ended with exit code {child.exitcode}")
    finally:
        for child in writers:
            if child.is_alive():
                child.terminate()
            child.join()
        for end in (queue, *(end for pair in pipes for end in pair)):
            with contextlib.suppress(OSError):
                os.close(end)
    handle.seek(0, os.SEEK_END)
    return result
