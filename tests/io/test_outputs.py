"""The output-safety module: overlap and non-regular refusals, umask-respecting atomic writes, temp names
that a later run removes only when their owner is gone."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from rewardgym.errors import DataError, UsageError
from rewardgym.io.jsonl import JsonlAppender
from rewardgym.io.outputs import (
    MARKER,
    atomic_write_bytes,
    atomic_writer,
    command_files,
    create_temp_file,
    guard_outputs,
    make_temp_dir,
    note_inputs,
    owner_alive,
    process_start,
    remove_stale,
    temp_name,
)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"a": 1}\n')
    return path


def test_an_output_that_is_an_input_is_refused_by_path_symlink_and_hard_link(
    data: Path, tmp_path: Path
) -> None:
    (tmp_path / "link.jsonl").symlink_to(data)
    os.link(data, tmp_path / "hard.jsonl")
    cases = {
        data: "--input file",
        tmp_path / "sub/../in.jsonl": "--input file",
        tmp_path / "link.jsonl": "through a symbolic link",
        tmp_path / "hard.jsonl": "a hard link to the same file",
    }
    for output, fragment in cases.items():
        with pytest.raises(UsageError, match="refusing to write --output") as caught:
            guard_outputs([(output, "--output")], [(data, "--input")])
        assert fragment in str(caught.value) and str(data) in str(caught.value)
    assert data.read_bytes() == b'{"a": 1}\n'
    guard_outputs([(tmp_path / "other.jsonl", "--output")], [(data, "--input"), (None, "--prompt-config")])


def test_an_existing_output_that_is_not_a_regular_file_is_refused_and_left_alone(
    data: Path, tmp_path: Path
) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere.jsonl")
    for path, kind in (
        (Path("/dev/null"), "a character device"),
        (tmp_path / "fifo", "a FIFO"),
        (tmp_path / "folder", "a directory"),
        (tmp_path / "link", "a symbolic link"),
    ):
        with pytest.raises(DataError, match=kind):
            guard_outputs([(path, "--output")], [(data, "--input")])
        with pytest.raises(DataError, match=kind):
            atomic_write_bytes(path, b"x")
        with pytest.raises(DataError, match=kind):
            JsonlAppender(path)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
    assert os.path.islink(tmp_path / "link") and not (tmp_path / "elsewhere.jsonl").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "folder", "in.jsonl", "link"]


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077])
def test_atomic_writes_and_appends_respect_the_umask(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        atomic_write_bytes(tmp_path / "whole.json", b"[]")
        with JsonlAppender(tmp_path / "stream.jsonl") as appender:
            appender.write({"a": 1})
    finally:
        os.umask(old)
    for name in ("whole.json", "stream.jsonl"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask, name


def test_a_failed_atomic_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_writer(target) as handle:
        handle.write(b"new, half")
        assert [p for p in tmp_path.iterdir() if MARKER in p.name]  # the temp file while writing
        raise RuntimeError("boom")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def _dead_pid() -> tuple[int, int]:
    """The pid and start time of a process that has ended."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    start = process_start(child.pid)
    assert start is not None
    child.communicate(b"")
    return child.pid, start


def test_temp_names_carry_the_owner_and_only_dead_owners_leftovers_are_removed(tmp_path: Path) -> None:
    pid, start = _dead_pid()
    dead_file = tmp_path / f".out.jsonl{MARKER}{pid}-{start}-0a1b2c3d"
    dead_file.write_bytes(b"x" * 1000)
    dead_dir = tmp_path / f"rewardgym-profile{MARKER}{pid}-{start}-0a1b2c3d"
    dead_dir.mkdir()
    (dead_dir / "1.chunk").write_bytes(b"chunk")
    reused = tmp_path / f".out.jsonl{MARKER}{os.getpid()}-{start + 1}-0a1b2c3e"  # our pid, other start
    reused.write_bytes(b"x")
    fd, live_file = create_temp_file(tmp_path / "out.jsonl")
    os.close(fd)
    live_dir = make_temp_dir(tmp_path, "rewardgym-profile")
    foreign = tmp_path / f".notes{MARKER}{pid}-{start}-0a1b2c3f"  # a symbolic link is never followed
    foreign.symlink_to(tmp_path / "keep")
    (tmp_path / "keep").write_bytes(b"keep")
    (tmp_path / "out.jsonl.tmp").write_bytes(b"not ours")

    assert owner_alive(live_file.name) is True and owner_alive(dead_file.name) is False
    assert owner_alive(reused.name) is False and owner_alive("out.jsonl") is None
    assert temp_name("x").startswith(f"x{MARKER}{os.getpid()}-")
    removed = remove_stale(tmp_path)
    assert sorted(removed) == sorted([dead_file, dead_dir, reused])
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([live_file.name, live_dir.name, foreign.name, "keep", "out.jsonl.tmp"])
    assert stat.S_IMODE(live_dir.stat().st_mode) == 0o700


def test_one_ledger_per_command_checks_every_later_write_against_every_input(tmp_path: Path) -> None:
    """Inside a command, a sidecar guarded (or written) later is still checked against the inputs an
    earlier guard recorded, and against files noted as read beside them; outside, no ledger is kept."""
    given, beside, hard = tmp_path / "in.jsonl", tmp_path / "in_sidecar.json", tmp_path / "hard.json"
    given.write_bytes(b"input\n")
    beside.write_bytes(b"beside\n")
    os.link(beside, hard)
    with command_files():
        guard_outputs([(tmp_path / "out.jsonl", "--output")], [(given, "--input")])
        note_inputs([(beside, "sidecar (read beside --input)")])
        with pytest.raises(UsageError, match=r"refusing to write analysis output .* it is the --input file"):
            guard_outputs([(given, "analysis output")], [])
        with pytest.raises(UsageError, match="it is the --input file"), atomic_writer(given) as handle:
            handle.write(b"lost")
        with pytest.raises(UsageError, match="a hard link to the same file"):
            JsonlAppender(hard)
        with atomic_writer(tmp_path / "out.jsonl") as handle:  # an output that is no input is written
            handle.write(b"ok\n")
    assert given.read_bytes() == b"input\n" and beside.read_bytes() == b"beside\n"
    assert not [p for p in os.listdir(tmp_path) if MARKER in p]
    with atomic_writer(given) as handle:  # library use: no command, no ledger
        handle.write(b"rewritten\n")
    assert given.read_bytes() == b"rewritten\n"
