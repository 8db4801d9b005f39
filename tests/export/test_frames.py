"""The pure part of the export: flattening rows and typing columns from JSON values."""

from __future__ import annotations

import polars as pl
import pytest

from rewardgym.export.frames import column, flatten, rows_frame


def test_flatten_dots_nested_objects_and_keeps_lists_and_named_keys_as_json_text() -> None:
    row = {"a": {"b": 1, "c": {"d": "x"}}, "e": [1, {"f": 2}], "sample": {"g": 1}, "h": {}, "i": None}
    assert flatten(row, as_text=("sample",)) == {
        "a.b": 1,
        "a.c.d": "x",
        "e": '[1,{"f":2}]',
        "sample": '{"g":1}',
        "h": "{}",
        "i": None,
    }


def test_two_paths_to_one_column_are_refused() -> None:
    with pytest.raises(ValueError, match=r"same column 'a\.b'"):
        flatten({"a": {"b": 1}, "a.b": 2})


@pytest.mark.parametrize(
    ("values", "dtype", "stored"),
    [
        ([True, None, False], pl.Boolean, [True, None, False]),
        ([1, None, 3], pl.Int64, [1, None, 3]),
        ([1, 2.5], pl.Float64, [1.0, 2.5]),
        (["x", None], pl.String, ["x", None]),
        ([None, None], pl.Float64, [None, None]),
        ([1, "x", True], pl.String, ["1", '"x"', "true"]),  # a mix keeps every value, as JSON text
        ([1, 1 << 64], pl.String, ["1", str(1 << 64)]),  # beyond int64: text, not a wrapped number
    ],
)
def test_column_types(values: list[object], dtype: pl.DataType, stored: list[object]) -> None:
    series = column("c", values)
    assert series.dtype == dtype and series.to_list() == stored


def test_rows_frame_orders_columns_by_first_appearance_and_fills_nulls() -> None:
    table = rows_frame([{"a": 1}, {"b": "x", "a": 2}])
    assert table.columns == ["a", "b"] and table.to_dicts() == [{"a": 1, "b": None}, {"a": 2, "b": "x"}]
