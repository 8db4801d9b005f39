"""Properties of the JSONL reader and writers (:mod:`rewardgym.io.jsonl`).

- Any bytes: the strict reader yields dict rows or raises ``DataError`` naming ``file:line`` of a real line —
  never another exception, never a row that is not a dict.
- Any JSON objects written by :func:`atomic_write_jsonl` / :class:`JsonlAppender` read back equal.
- A file torn anywhere inside its last line: the tolerant reader returns exactly the whole rows; after
  :func:`repair_torn_tail` and an append, the strict reader reads the whole rows plus the new one.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewardgym.errors import DataError
from rewardgym.io.jsonl import (
    JsonlAppender,
    atomic_write_jsonl,
    iter_jsonl,
    parse_line,
    read_jsonl,
    read_jsonl_tolerant,
    repair_torn_tail,
)
from rewardgym.io.outputs import MARKER

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FSYNC_SETTINGS = settings(SETTINGS, max_examples=60)
"""Fewer examples where every example writes and syncs files."""

# JSON values orjson writes and reads back identically (64-bit ints, finite floats, valid Unicode).
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=8), inner, max_size=4
        )
    ),
    max_leaves=12,
)
rows = st.dictionaries(st.text(max_size=8), json_values, max_size=5)

# Byte soup biased towards JSON-ish fragments, newlines and invalid UTF-8.
fragments = st.sampled_from(
    [b"{", b"}", b"[", b"]", b'"', b":", b",", b"\n", b"\r\n", b" ", b"null", b"1", b'"k"', b"\xff", b"\xc3"]
)
soups = st.lists(fragments | st.binary(max_size=6), max_size=30).map(b"".join)


@contextlib.contextmanager
def _tmp_file(data: bytes) -> Iterator[Path]:
    """A fresh folder per example holding ``rows.jsonl`` (removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix="rg-jsonl-prop-") as folder:
        path = Path(folder) / "rows.jsonl"
        path.write_bytes(data)
        yield path


def _line_count(data: bytes) -> int:
    return len(data.splitlines(keepends=True)) if data else 0


@SETTINGS
@given(soups)
def test_any_bytes_give_dict_rows_or_a_data_error_naming_a_real_line(data: bytes) -> None:
    with _tmp_file(data) as path:
        read: list[dict[str, Any]] = []
        try:
            for number, row in iter_jsonl(path):
                assert isinstance(row, dict)
                assert 1 <= number <= _line_count(data)
                read.append(row)
        except DataError as exc:
            match = re.match(rf"^{re.escape(str(path))}:(\d+): ", str(exc))
            assert match, str(exc)
            line = int(match.group(1))
            assert line == len(read) + 1  # the first bad line, right after the good ones
            assert line <= max(1, _line_count(data))
            assert "\n" not in str(exc)  # one readable line


@SETTINGS
@given(st.binary(max_size=64))
def test_parse_line_never_raises_anything_but_data_error(raw: bytes) -> None:
    try:
        row = parse_line(raw, "f.jsonl", 7)
    except DataError as exc:
        assert str(exc).startswith("f.jsonl:7: ")
    else:
        assert isinstance(row, dict)
        assert row == orjson.loads(raw.rstrip(b"\r\n"))


@FSYNC_SETTINGS
@given(st.lists(rows, max_size=8))
def test_written_rows_read_back_equal(values: list[dict[str, Any]]) -> None:
    with _tmp_file(b"") as path:
        assert atomic_write_jsonl(path, values) == len(values)
        assert read_jsonl(path) == values
        appended = path.with_name("appended.jsonl")
        with JsonlAppender(appended) as appender:
            for value in values:
                appender.write(value)
        assert read_jsonl(appended) == values
        assert appended.read_bytes() == path.read_bytes()
        assert not [p for p in path.parent.iterdir() if MARKER in p.name]  # no temp file left behind


@FSYNC_SETTINGS
@given(st.lists(rows, min_size=1, max_size=6), rows, st.data())
def test_a_torn_last_line_is_dropped_and_repaired(
    whole: list[dict[str, Any]], torn_row: dict[str, Any], data: st.DataObject
) -> None:
    body = b"".join(orjson.dumps(r) + b"\n" for r in whole)
    torn_line = orjson.dumps(torn_row)
    cut = data.draw(st.integers(min_value=1, max_value=len(torn_line) - 1), label="cut")
    with _tmp_file(body + torn_line[:cut]) as path:
        found, torn = read_jsonl_tolerant(path)
        assert found == whole
        assert torn is not None
        assert torn.line_number == len(whole) + 1
        assert torn.offset == len(body)

        repaired = repair_torn_tail(path)
        assert repaired is not None and repaired.offset == len(body)
        assert path.read_bytes() == body
        with JsonlAppender(path) as appender:
            appender.write({"after": True})
        assert read_jsonl(path) == [*whole, {"after": True}]


@FSYNC_SETTINGS
@given(st.lists(rows, min_size=1, max_size=6))
def test_a_complete_last_line_without_newline_is_kept(whole: list[dict[str, Any]]) -> None:
    body = b"".join(orjson.dumps(r) + b"\n" for r in whole)[:-1]  # the final newline never got written
    with _tmp_file(body) as path:
        found, torn = read_jsonl_tolerant(path)
        assert (found, torn) == (whole, None)
        with JsonlAppender(path) as appender:  # repairs by ending the line, then appends
            appender.write({"after": 1})
        assert read_jsonl(path) == [*whole, {"after": 1}]
