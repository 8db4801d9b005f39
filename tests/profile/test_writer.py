"""Writing one file from several processes in place: the exact concatenation, or an error and no output."""

from __future__ import annotations

import errno
import multiprocessing
import os
import random
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rewardgym.io.oserrors import FileAccessError
from rewardgym.io.outputs import atomic_writer
from rewardgym.profile.write.writer import MAX_PIECES, PieceWriteError, write_pieces


def _nothing() -> None:
    return None


def _piece(k: int) -> bytes:
    size = random.Random(k).choice([0, 1, 7, 1000, 70_000])  # empty pieces and pieces larger than a pipe
    return bytes([65 + k % 26]) * size + b"|%d\n" % k


@pytest.mark.parametrize(("pieces", "processes"), [(1, 2), (5, 1), (7, 2), (40, 3), (3, 8)])
def test_the_file_is_the_pieces_in_order(tmp_path: Path, pieces: int, processes: int) -> None:
    target = tmp_path / "out.jsonl"
    with atomic_writer(target) as handle:
        assert write_pieces(handle, pieces, _piece, processes, os.getpid) == os.getpid()  # ran here
        assert handle.tell() == sum(len(_piece(k)) for k in range(pieces))
        handle.write(b"tail\n")  # the handle is left at the end of the file
    assert target.read_bytes() == b"".join(_piece(k) for k in range(pieces)) + b"tail\n"


class _ChildFails:
    """``produce`` for which a child fails on the first piece it takes (after leaving a marker file), and
    ``meanwhile`` that holds this process back until a child has failed — so the failure is a child's."""

    def __init__(self, folder: Path, failure: Callable[[], None]) -> None:
        self.parent = os.getpid()
        self.marker = folder / "child-failed"
        self.failure = failure

    def produce(self, k: int) -> bytes:
        if os.getpid() != self.parent:
            self.marker.touch()
            self.failure()
        return _piece(k)

    def meanwhile(self) -> None:
        deadline = time.monotonic() + 30
        while not self.marker.exists() and time.monotonic() < deadline:
            time.sleep(0.005)  # polls a condition with a deadline
        assert self.marker.exists()


def _value_error() -> None:
    raise ValueError("this piece cannot be made")


def _no_space() -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def _dies() -> None:
    os._exit(3)  # a child that dies without a word


def test_a_child_failure_is_raised_and_no_output_is_left(tmp_path: Path) -> None:
    fails = _ChildFails(tmp_path / "marks", _value_error)
    fails.marker.parent.mkdir()
    target = tmp_path / "out" / "out.jsonl"
    target.parent.mkdir()
    with (
        pytest.raises(PieceWriteError, match="ValueError: this piece cannot be made"),
        atomic_writer(target) as handle,
    ):
        write_pieces(handle, 12, fails.produce, 2, fails.meanwhile)
    assert list(target.parent.iterdir()) == []
    assert multiprocessing.active_children() == []


def _parent_no_space(k: int) -> bytes:
    if k == 3:
        _no_space()
    return _piece(k)


def test_an_os_error_keeps_its_errno_in_this_process(tmp_path: Path) -> None:
    # atomic_writer reports it under the output's name (see rewardgym.io.oserrors), errno kept.
    with pytest.raises(FileAccessError) as caught, atomic_writer(tmp_path / "out.jsonl") as handle:
        write_pieces(handle, 8, _parent_no_space, 1, _nothing)
    assert caught.value.errno == errno.ENOSPC
    assert str(caught.value) == f"cannot write '{tmp_path / 'out.jsonl'}': No space left on device"
    assert list(tmp_path.iterdir()) == []


def test_an_os_error_keeps_its_errno_from_a_child(tmp_path: Path) -> None:
    fails = _ChildFails(tmp_path / "marks", _no_space)
    fails.marker.parent.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(FileAccessError) as caught, atomic_writer(out / "out.jsonl") as handle:
        write_pieces(handle, 8, fails.produce, 3, fails.meanwhile)
    assert caught.value.errno == errno.ENOSPC
    assert "No space left on device" in str(caught.value)
    assert list(out.iterdir()) == []


def test_a_child_that_dies_is_an_error(tmp_path: Path) -> None:
    fails = _ChildFails(tmp_path / "marks", _dies)
    fails.marker.parent.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(PieceWriteError, match="exit code 3"), atomic_writer(out / "out.jsonl") as handle:
        write_pieces(handle, 6, fails.produce, 2, fails.meanwhile)
    assert list(out.iterdir()) == []


def _meanwhile_fails() -> None:
    raise RuntimeError("statistics failed")


def test_a_failure_meanwhile_stops_the_children_and_leaves_no_output(tmp_path: Path) -> None:
    with (
        pytest.raises(RuntimeError, match="statistics failed"),
        atomic_writer(tmp_path / "out.jsonl") as handle,
    ):
        write_pieces(handle, 50, _piece, 3, _meanwhile_fails)
    assert list(tmp_path.iterdir()) == []
    assert multiprocessing.active_children() == []


def test_the_file_must_start_empty_and_the_pieces_fit_a_pipe(tmp_path: Path) -> None:
    with open(tmp_path / "x", "wb") as handle:
        with pytest.raises(ValueError, match="1 to 2048 pieces"):
            write_pieces(handle, MAX_PIECES + 1, _piece, 2, _nothing)
        handle.write(b"x")
        with pytest.raises(ValueError, match="from its start"):
            write_pieces(handle, 2, _piece, 2, _nothing)


def test_as_many_pieces_as_allowed(tmp_path: Path) -> None:
    def tiny(k: int) -> bytes:
        return b"%d\n" % k

    with atomic_writer(tmp_path / "out.jsonl") as handle:
        write_pieces(handle, MAX_PIECES, tiny, 3, _nothing)
    assert (tmp_path / "out.jsonl").read_bytes() == b"".join(tiny(k) for k in range(MAX_PIECES))
