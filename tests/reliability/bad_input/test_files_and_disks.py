"""Inputs that are not regular files, and file systems that refuse writes.

- A pipe (FIFO, ``/dev/stdin`` fed by a pipe) or a device given as a data file is refused by name before it
  is opened: the writer on the other end is never read from (its data is all still there afterwards), and
  no output is written next to ``/dev``.
- A full disk (a real 256 KiB tmpfs, filled up) and a read-only file system (a read-only bind mount) give
  one line ``Error: cannot write '<file>': <reason>``, exit code 1, no traceback, and every file that was
  there before is unchanged (a stream keeps its earlier rows whole).

The mounts need root (CAP_SYS_ADMIN); without it those tests are skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardgym.io.jsonl import read_jsonl
from tests.conftest import REPO_ROOT
from tests.reliability.bad_input.catalogue import check_files, gym, snapshot
from tests.stubs.inprocess_stack import AGENT, Stack

PROFILE = ["eval", "profile", "--inputs", "out/rollouts_materialized_inputs.jsonl", "--rollouts"]


def _one_error_line(stderr: str, expected: str) -> None:
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("Error: ")]
    assert errors == [expected], stderr


# ----------------------------------------------------------------------------------- special inputs
class _FifoWriter:
    """A thread that writes ``data`` into a FIFO once a reader opens it; :meth:`drain` opens it from this
    side afterwards and returns what was still unread (all of it, if the command never read the pipe)."""

    def __init__(self, path: Path, data: bytes) -> None:
        os.mkfifo(path)
        self.path, self.data = path, data
        self.thread = threading.Thread(target=self._write, daemon=True)
        self.thread.start()

    def _write(self) -> None:
        with open(self.path, "wb") as handle:  # blocks until a reader opens the FIFO
            handle.write(self.data)

    def drain(self) -> bytes:
        with open(self.path, "rb") as handle:  # releases the writer
            unread = handle.read()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()
        return unread


@pytest.mark.parametrize(
    ("args", "option"),
    [
        ([*PROFILE, "fifo.jsonl"], "--rollouts"),
        (["eval", "profile", "--inputs", "fifo.jsonl", "--rollouts", "out/rollouts.jsonl"], "--inputs"),
        (["eval", "run", "--no-serve", "--head-url", "{head}", "--input", "fifo.jsonl", "--agent", AGENT,
          "-o", "out/rollouts.jsonl"], "--input"),
        (["eval", "aggregate", "--input", "fifo.jsonl", "-o", "merged/all.jsonl", "--head-url", "{head}"],
         "Rollouts file"),
    ],
    ids=["profile-rollouts", "profile-inputs", "run-input", "aggregate-input"],
)  # fmt: skip
def test_a_fifo_input_is_refused_unread(
    args: list[str], option: str, previous_run: Path, bad_input_stack: Stack, tmp_path: Path
) -> None:
    shutil.copytree(previous_run, tmp_path, dirs_exist_ok=True)
    data = (tmp_path / "out/rollouts.jsonl").read_bytes()
    writer = _FifoWriter(tmp_path / "fifo.jsonl", data)
    before = snapshot(tmp_path)
    done = gym([a.replace("{head}", bad_input_stack.head_url) for a in args], tmp_path, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    _one_error_line(
        done.stderr,
        f"Error: 'fifo.jsonl' ({option}) is a pipe (FIFO), not a regular file: save the data to a file first "
        "(e.g. `cat > rows.jsonl`), since it is read more than once",
    )
    assert writer.drain() == data  # never read, so never mistaken for an empty file
    assert check_files(before, tmp_path) == []


@pytest.mark.parametrize("command", ["profile", "run", "reverify"])
def test_dev_stdin_fed_by_a_pipe_is_refused(
    command: str, previous_run: Path, bad_input_stack: Stack, tmp_path: Path
) -> None:
    shutil.copytree(previous_run, tmp_path, dirs_exist_ok=True)
    args = {
        "profile": [*PROFILE, "/dev/stdin"],
        "run": ["eval", "run", "--no-serve", "--head-url", bad_input_stack.head_url, "--input", "/dev/stdin",
                "--agent", AGENT, "-o", "out/rollouts.jsonl"],
        "reverify": ["eval", "reverify", "--resources-server", "mcqa", "--model-type", "openai_model",
                     "--model-url", "http://127.0.0.1:9/v1", "--model", "m", "--model-api-key", "unused-key",
                     "--inputs", "out/rollouts_materialized_inputs.jsonl", "--rollouts", "/dev/stdin",
                     "-o", "out/rescored.jsonl"],
    }[command]  # fmt: skip
    option = {"profile": "--rollouts", "run": "--input", "reverify": "Rollouts file"}[command]
    before = snapshot(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "REWARDGYM_DEBUG"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "rewardgym", *args],
        input=(tmp_path / "out/rollouts.jsonl").read_text(),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    _one_error_line(
        done.stderr,
        f"Error: '/dev/stdin' ({option}) is a pipe (FIFO), not a regular file: save the data to a file "
        "first (e.g. `cat > rows.jsonl`), since it is read more than once",
    )
    assert check_files(before, tmp_path) == []
    assert not list(Path("/dev").glob("stdin_*"))


def test_a_device_or_a_file_in_dev_is_refused(previous_run: Path, tmp_path: Path) -> None:
    shutil.copytree(previous_run, tmp_path, dirs_exist_ok=True)
    before = snapshot(tmp_path)
    done = gym([*PROFILE, "/dev/null"], tmp_path)
    assert done.returncode == 1
    _one_error_line(
        done.stderr,
        "Error: '/dev/null' (--rollouts) is a character device, not a regular file: save the data to a file "
        "first (e.g. `cat > rows.jsonl`), since it is read more than once",
    )
    assert check_files(before, tmp_path) == []
    assert not Path("/dev/null_reward_profiling.jsonl").exists()


# ----------------------------------------------------------------------------------- file systems
def _mount(args: list[str]) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"mount not permitted here: {done.stderr.strip()}")


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 256 KiB tmpfs (room for the earlier run, not for much more)."""
    folder = tmp_path / "disk"
    folder.mkdir()
    _mount(["-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)])
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _fill(disk: Path) -> None:
    """Take every free byte of the disk."""
    with open(disk / "filler", "wb", buffering=0) as handle:
        block = b"\0" * 4096
        try:
            while True:
                handle.write(block)
        except OSError:
            pass
        try:
            while True:
                handle.write(b"\0")
        except OSError:
            pass


def test_profile_on_a_full_disk(previous_run: Path, tiny_disk: Path) -> None:
    shutil.copytree(previous_run, tiny_disk, dirs_exist_ok=True)
    _fill(tiny_disk)
    before = snapshot(tiny_disk)
    done = gym([*PROFILE, "out/rollouts.jsonl"], tiny_disk)
    assert done.returncode == 1, done.stdout + done.stderr
    _one_error_line(
        done.stderr, "Error: cannot write 'out/rollouts_reward_profiling.jsonl': No space left on device"
    )
    assert check_files(before, tiny_disk) == []  # the earlier profile kept, no temp file left


def test_run_resume_on_a_full_disk_keeps_the_rows_written_before(
    previous_run: Path, tiny_disk: Path, bad_input_stack: Stack
) -> None:
    shutil.copytree(previous_run, tiny_disk, dirs_exist_ok=True)
    rollouts = tiny_disk / "out/rollouts.jsonl"
    lines = rollouts.read_bytes().splitlines(keepends=True)
    rollouts.write_bytes(b"".join(lines[:4]))  # two rollouts left to run
    _fill(tiny_disk)
    before = snapshot(tiny_disk)
    done = gym(
        ["eval", "run", "--no-serve", "--head-url", bad_input_stack.head_url, "--resume", "-o",
         "out/rollouts.jsonl"],
        tiny_disk,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    _one_error_line(done.stderr, "Error: cannot write 'out/rollouts.jsonl': No space left on device")
    # A row that still fitted in the file's last page may have been added; the rows written before are
    # kept, and the file ends on a whole row (the failed one was cut off).
    failures = check_files(before, tiny_disk)
    assert [str(f) for f in failures] in ([], ["[previous_outputs] out/rollouts.jsonl was changed"])
    after = rollouts.read_bytes()
    assert after.startswith(before["out/rollouts.jsonl"])
    assert after.endswith(b"\n") and len(read_jsonl(rollouts)) in (4, 5)


def test_profile_and_run_on_a_read_only_file_system(
    previous_run: Path, tmp_path: Path, bad_input_stack: Stack
) -> None:
    source, folder = tmp_path / "source", tmp_path / "ro"
    shutil.copytree(previous_run, source)
    folder.mkdir()
    _mount(["--bind", str(source), str(folder)])
    try:
        _mount(["-o", "remount,bind,ro", str(folder)])
        before = snapshot(folder)
        done = gym([*PROFILE, "out/rollouts.jsonl"], folder)
        assert done.returncode == 1, done.stdout + done.stderr
        _one_error_line(
            done.stderr, "Error: cannot write 'out/rollouts_reward_profiling.jsonl': Read-only file system"
        )
        done = gym(
            ["eval", "run", "--no-serve", "--head-url", bad_input_stack.head_url, "--input", "in.jsonl",
             "--agent", AGENT, "-o", "out/rollouts.jsonl"],
            folder,
        )  # fmt: skip
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
        assert len(errors) == 1 and errors[0].endswith(": Read-only file system"), done.stderr
        assert errors[0].startswith("Error: cannot write 'out/"), done.stderr
        assert check_files(before, folder) == []
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_fresh_run_on_a_full_disk_keeps_the_earlier_run(
    previous_run: Path, tiny_disk: Path, bad_input_stack: Stack
) -> None:
    shutil.copytree(previous_run, tiny_disk, dirs_exist_ok=True)
    (tiny_disk / "in.jsonl").write_bytes((tiny_disk / "in.jsonl").read_bytes() * 20)  # more rows than room
    _fill(tiny_disk)
    before = snapshot(tiny_disk)
    done = gym(
        ["eval", "run", "--no-serve", "--head-url", bad_input_stack.head_url, "--input", "in.jsonl",
         "--agent", AGENT, "-o", "out/rollouts.jsonl"],
        tiny_disk,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("Error: cannot write 'out/"), done.stderr
    assert errors[0].endswith("': No space left on device"), done.stderr
    assert check_files(before, tiny_disk) == []  # the earlier run's files all kept, no temp file left
