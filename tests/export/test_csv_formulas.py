"""CSV export defuses spreadsheet formulas (issue 22, class 9): a text cell starting with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return gets a leading ``'``; numbers and Parquet are unchanged."""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl

from rewardgym.export.api import Format, write_table

HOSTILE = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd", "plain", "a=b"]


def test_formula_like_text_is_prefixed_in_csv_only(tmp_path: Path) -> None:
    table = pl.DataFrame({"response_text": HOSTILE, "reward": [-1.0, 0.0, 1.0, 0.5, -0.5, 2.0, 3.0, 4.0]})
    write_table(table, tmp_path / "t.csv", Format.CSV)
    write_table(table, tmp_path / "t.parquet", Format.PARQUET)
    csv = pl.read_csv(io.BytesIO((tmp_path / "t.csv").read_bytes()))
    assert csv["response_text"].to_list() == [f"'{t}" for t in HOSTILE[:6]] + ["plain", "a=b"]
    assert csv["reward"].to_list() == table["reward"].to_list()  # a negative number stays a number
    assert pl.read_parquet(tmp_path / "t.parquet").equals(table)
