"""OS errors while writing are reported under the output's own name (see io/oserrors.py).
The real full disk and read-only file system are in tests/reliability/bad_input/test_files_and_disks.py;
EIO cannot be produced on demand there, so its mapping is checked here."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from rewardgym.io.oserrors import FileAccessError, os_error_message, writing


@pytest.mark.parametrize(
    ("code", "reason"), [(errno.EIO, "Input/output error"), (errno.ENOSPC, "No space left on device")]
)
def test_an_error_naming_no_file_is_reported_under_the_output(tmp_path: Path, code: int, reason: str) -> None:
    target = tmp_path / "out.jsonl"
    with pytest.raises(FileAccessError) as caught, writing(target):
        raise OSError(code, reason)
    assert str(caught.value) == f"cannot write '{target}': {reason}"
    assert caught.value.errno == code


def test_a_temp_file_is_reported_under_its_target(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    temp = str(tmp_path / ".out.json.abc123.tmp")
    with pytest.raises(FileAccessError) as caught, writing(target):
        raise OSError(errno.EROFS, "Read-only file system", temp)
    assert str(caught.value) == f"cannot write '{target}': Read-only file system"


def test_errors_about_other_files_or_not_about_writing_pass_through(tmp_path: Path) -> None:
    other = OSError(errno.ENOENT, "No such file or directory", "in.jsonl")
    with pytest.raises(OSError) as caught, writing(tmp_path / "out.jsonl"):
        raise other
    assert caught.value is other
    assert os_error_message(other) == "cannot access 'in.jsonl': No such file or directory"
    assert os_error_message(OSError(errno.EROFS, "Read-only file system", "/x")) == (
        "cannot write '/x': Read-only file system"
    )
    with pytest.raises(OSError) as unnamed, writing(tmp_path / "out.jsonl"):
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
    assert not isinstance(unnamed.value, FileAccessError)
