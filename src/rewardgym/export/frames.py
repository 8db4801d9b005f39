"""Typed table columns from JSON values, and flattening of nested rows (pure; no I/O).

Contract:

- :func:`flatten` turns one JSON object into ``{column: scalar}``: a nested object becomes dotted columns
  (``{"a": {"b": 1}}`` → ``a.b``); a list, an empty object and every key named in ``as_text`` become the
  value's JSON text; two paths that flatten to the same name are a ``ValueError`` (the caller names the
  file and line).
- :func:`column` types a list of scalars (``None`` = null) by the JSON types present: only booleans →
  Boolean; only integers → Int64; integers and floats → Float64; only strings → String; nothing but
  nulls → Float64 (most nullable fields of these files are statistics); any other mix, or an integer
  beyond int64 → String holding each value's JSON text, so no value is dropped or coerced.
- :func:`frame` builds a polars DataFrame from named columns in the given order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson
import polars as pl

_INT64 = (-(1 << 63), (1 << 63) - 1)


def json_text(value: Any) -> str:
    # orjson writes integers up to 64 bits; a wider one (Python reads any) is its own decimal text
    return str(value) if type(value) is int else orjson.dumps(value).decode()


def flatten(row: Mapping[str, Any], as_text: Iterable[str] = ()) -> dict[str, Any]:
    """One object as flat columns, in key order, depth first (see module doc)."""
    out: dict[str, Any] = {}
    _flatten_into(out, "", row, frozenset(as_text))
    return out


def _flatten_into(out: dict[str, Any], prefix: str, mapping: Mapping[str, Any], text: frozenset[str]) -> None:
    for key, value in mapping.items():
        name = prefix + key
        if isinstance(value, dict) and value and name not in text:
            _flatten_into(out, name + ".", value, text)
            continue
        if name in out:
            raise ValueError(f"two fields flatten to the same column '{name}'")
        out[name] = json_text(value) if isinstance(value, (dict, list)) or name in text else value


def column(name: str, values: Sequence[Any]) -> pl.Series:
    """A typed series of JSON scalars (see module doc for the rules)."""
    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return pl.Series(name, values, dtype=pl.Float64)
    if kinds == {bool}:
        return pl.Series(name, values, dtype=pl.Boolean)
    wide = int in kinds and any(type(v) is int and not _INT64[0] <= v <= _INT64[1] for v in values)
    if kinds == {int} and not wide:
        return pl.Series(name, values, dtype=pl.Int64)
    if kinds <= {int, float} and not wide:
        return pl.Series(name, [None if v is None else float(v) for v in values], dtype=pl.Float64)
    if kinds == {str}:
        return pl.Series(name, values, dtype=pl.String)
    return pl.Series(name, [None if v is None else json_text(v) for v in values], dtype=pl.String)


def rows_frame(rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """A frame of flat rows: columns in order of first appearance, a missing field is null."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    return pl.DataFrame([column(name, [row.get(name) for row in rows]) for name in names])


def frame(columns: Mapping[str, Sequence[Any]]) -> pl.DataFrame:
    return pl.DataFrame([column(name, values) for name, values in columns.items()])
