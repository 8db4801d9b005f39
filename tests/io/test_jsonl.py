"""Strict JSONL reading names file:line; appends and atomic writes are crash-safe."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from rewardgym.errors import DataError
from rewardgym.io import (
    JsonlAppender,
    atomic_write_bytes,
    atomic_writer,
    iter_jsonl,
    read_jsonl,
    read_jsonl_tolerant,
    repair_torn_tail,
)


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(data)
    return path


def test_reads_rows_with_line_numbers(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a": 1}\n{"a": 2}\n')
    assert list(iter_jsonl(path)) == [(1, {"a": 1}), (2, {"a": 2})]


def test_limit_reads_only_first_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a": 1}\n{"a": 2}\nnot json\n')
    assert [row for _, row in iter_jsonl(path, limit=2)] == [{"a": 1}, {"a": 2}]


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b'{"a": 1}\n{"a": \n', "rows.jsonl:2: malformed JSON"),
        (b'{"a": 1}\n\n{"a": 2}\n', "rows.jsonl:2: blank line"),
        (b'{"a": 1}\n{"a": "\xff\xfe"}\n', "rows.jsonl:2: line is not valid UTF-8"),
        (b"[1, 2]\n", "rows.jsonl:1: expected a JSON object, got list"),
        (b"null\n", "rows.jsonl:1: expected a JSON object, got null"),
    ],
)
def test_each_fault_names_file_and_line(tmp_path: Path, data: bytes, fragment: str) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(DataError) as info:
        read_jsonl(path)
    assert fragment in str(info.value)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"Input file not found: '.*nope.jsonl'"):
        read_jsonl(tmp_path / "nope.jsonl", what="Input file")


def test_snippet_is_short(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"text": "' + b"x" * 500 + b"\n")
    with pytest.raises(DataError) as info:
        read_jsonl(path)
    assert len(str(info.value)) < 250


def test_tolerant_reader_drops_torn_final_line(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a": 1}\n{"a": 2}\n{"a": 3, "b"')
    rows, torn = read_jsonl_tolerant(path)
    assert rows == [{"a": 1}, {"a": 2}]
    assert torn is not None
    assert torn.line_number == 3
    assert torn.offset == len(b'{"a": 1}\n{"a": 2}\n')


def test_tolerant_reader_still_rejects_corruption_in_the_middle(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a": 1}\n{"a": \n{"a": 3}\n')
    with pytest.raises(DataError, match=r"rows\.jsonl:2"):
        read_jsonl_tolerant(path)


def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a": 1}\n{"a": 2}')
    rows, torn = read_jsonl_tolerant(path)
    assert rows == [{"a": 1}, {"a": 2}]
    assert torn is None


def test_appender_repairs_torn_tail_then_appends(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a": 1}\n{"a": 2')
    with JsonlAppender(path) as out:
        assert out.repaired is not None
        out.write({"a": 3})
        # Flushed at once: visible to another reader before close.
        assert read_jsonl(path) == [{"a": 1}, {"a": 3}]
    assert out.rows_written == 1


def test_repair_adds_missing_newline_to_a_complete_line(tmp_path: Path) -> None:
    path = _write(tmp_path, b'{"a": 1}')
    assert repair_torn_tail(path) is None
    assert path.read_bytes() == b'{"a": 1}\n'


def test_atomic_writer_leaves_old_file_on_failure(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    atomic_write_bytes(path, b"old")
    with pytest.raises(RuntimeError), atomic_writer(path) as handle:
        handle.write(b"half")
        raise RuntimeError("crash mid-write")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_atomic_writer_to_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="output folder does not exist"):
        atomic_write_bytes(tmp_path / "missing" / "out.json", b"x")


def test_appended_rows_are_valid_orjson(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "rows.jsonl"
    with JsonlAppender(path) as out:
        for i in range(3):
            out.write({"i": i, "s": "é"})
    assert [orjson.loads(line)["i"] for line in path.read_bytes().splitlines()] == [0, 1, 2]
