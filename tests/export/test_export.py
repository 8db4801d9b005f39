"""``gym eval export`` through the real CLI: every table read back with pandas, polars and DuckDB SQL and
compared with the JSONL / JSON it came from."""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pandas as pd
import polars as pl
import pytest

from tests.export.run import FAILURE, build_run
from tests.profile.helpers import gym, read_jsonl

FORMATS = ("parquet", "csv")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("run")
    inputs, rollouts = build_run(folder)
    for fmt in FORMATS:
        done = gym("eval", "export", "--rollouts", str(rollouts), "--inputs", str(inputs), "--format", fmt)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [
            f"Wrote {folder / f'run_tasks.{fmt}'} (3 rows)",
            f"Wrote {folder / f'run_rollouts.{fmt}'} (12 rows)",
            f"Wrote {folder / f'run_analysis.{fmt}'} (3 rows)",
            f"Wrote {folder / f'run_analysis_summary.{fmt}'} (1 rows)",
        ]
    return folder


def _read(path: Path, how: str) -> list[dict[str, Any]]:
    """The table's rows as dicts, read by pandas, polars or DuckDB SQL (nulls as None)."""
    parquet = path.suffix == ".parquet"
    if how == "pandas":
        frame = pd.read_parquet(path) if parquet else pd.read_csv(path, keep_default_na=False, na_values=[""])
        records = frame.astype(object).where(frame.notna(), None).to_dict("records")
        return [{str(k): v for k, v in record.items()} for record in records]
    if how == "polars":
        return (pl.read_parquet(path) if parquet else pl.read_csv(path, infer_schema_length=None)).to_dicts()
    reader = "read_parquet" if parquet else "read_csv_auto"
    relation = _sql(f"select * from {reader}('{path}')")
    return [dict(zip(relation.columns, row, strict=True)) for row in relation.fetchall()]


def _sql(query: str) -> duckdb.DuckDBPyRelation:
    relation = duckdb.sql(query)
    assert relation is not None  # a select always has a result
    return relation


def _same(ours: Any, source: Any) -> bool:
    if isinstance(source, float) or isinstance(ours, float):
        return ours is not None and source is not None and math.isclose(float(ours), float(source))
    if isinstance(source, bool) and isinstance(ours, str):  # pandas reads CSV booleans as text sometimes
        return ours.lower() == str(source).lower()
    return bool(ours == source)


@pytest.mark.parametrize("how", ["pandas", "polars", "duckdb"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_rollouts_table_matches_the_jsonl(run: Path, fmt: str, how: str) -> None:
    table = _read(run / f"run_rollouts.{fmt}", how)
    sources = sorted(
        read_jsonl(run / "run.jsonl"), key=lambda r: (r["_ng_task_index"], r["_ng_rollout_index"])
    )
    keys = [(r["_ng_task_index"], r["_ng_rollout_index"]) for r in table]
    assert keys == sorted([(r["_ng_task_index"], r["_ng_rollout_index"]) for r in sources] + [(1, 3)])
    by_key = {(r["_ng_task_index"], r["_ng_rollout_index"]): r for r in table}
    for source in sources:
        row = by_key[source["_ng_task_index"], source["_ng_rollout_index"]]
        usage = source["response"]["usage"]
        assert _same(row["reward"], source["reward"]), row
        assert row["agent"] == source["agent_ref"]["name"]
        for name in ("input_tokens", "output_tokens", "total_tokens"):
            assert row[name] == usage[name], (name, row)
        assert row["failure_class"] is None and row["failure_reason"] is None
        assert _same(row["cut_off"], source["response"]["status"] == "incomplete")
    failed = by_key[1, 3]
    assert failed["failure_class"] == FAILURE["_ng_failure_class"] == "timeout"
    assert failed["failure_reason"] == FAILURE["_ng_failure_reason"]
    assert failed["reward"] is None and failed["output_tokens"] is None and failed["agent"] == "a"
    assert by_key[2, 3]["agent"] == "b"
    # the response text survives quoting, commas, newlines and non-ASCII in every reader
    assert by_key[0, 2]["response_text"] == "  naïve — “quoted”, a,b\nline two  "
    assert by_key[0, 0]["response_text"] == "answer 0-0"
    assert by_key[2, 1]["response_text"] in ("", None)  # CSV cannot tell an empty text from a null


@pytest.mark.parametrize("how", ["pandas", "polars", "duckdb"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_tasks_table_is_the_profile_flattened(run: Path, fmt: str, how: str) -> None:
    table = _read(run / f"run_tasks.{fmt}", how)
    profile = read_jsonl(run / "run_reward_profiling.jsonl")
    assert len(table) == len(profile) == 3
    for row, source in zip(table, profile, strict=True):
        assert row["_ng_task_index"] == source["_ng_task_index"]
        for name in ("mean/reward", "std/reward", "num_rollouts", "missing_num_rollouts"):
            assert _same(row[name], source[name]), (name, row[name], source[name])
        # nested: `sample` and the list `rollout_infos` are JSON text holding the very values
        assert orjson.loads(row["sample"]) == source["sample"]
        assert orjson.loads(row["rollout_infos"]) == source["rollout_infos"]
    assert table[1]["num_rollouts"] == 3 and table[1]["missing_num_rollouts"] == 1


@pytest.mark.parametrize("how", ["pandas", "polars", "duckdb"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_analysis_tables_match_the_analysis_json(run: Path, fmt: str, how: str) -> None:
    doc = orjson.loads((run / "run_analysis.json").read_bytes())
    table = _read(run / f"run_analysis.{fmt}", how)
    per_task = doc["per_task"]
    assert [r["_ng_task_index"] for r in table] == per_task["_ng_task_index"] == [0, 1, 2]
    for name in ("n", "passes", "pass_rate", "low", "high", "band", "cut_off", "settled"):
        assert all(_same(r[name], v) for r, v in zip(table, per_task[name], strict=True)), name
    labels = [b["band"] for b in doc["uncertainty"]["bands"]]
    assert [r["band_label"] for r in table] == [labels[b] for b in per_task["band"]]
    (summary,) = _read(run / f"run_analysis_summary.{fmt}", how)
    assert summary["health.verdict"] == doc["health"]["verdict"]
    assert summary["run.failures.by_class.timeout"] == 1 == doc["run"]["failures"]["by_class"]["timeout"]
    assert _same(summary["uncertainty.pass_rate_overall"], doc["uncertainty"]["pass_rate_overall"])
    assert orjson.loads(summary["grpo.groups"]) == doc["grpo"]["groups"]


def test_duckdb_sql_over_the_tables(run: Path) -> None:
    """The point of the export: questions answered in SQL, joining the tables on the task key."""
    rollouts, analysis = run / "run_rollouts.parquet", run / "run_analysis.parquet"
    failures = _sql(
        f"select failure_class, count(*) from read_parquet('{rollouts}') "
        "where failure_class is not null group by 1"
    ).fetchall()
    assert failures == [("timeout", 1)]
    joined = _sql(
        f"""select r._ng_task_index, count(*) filter (where r.cut_off), any_value(a.cut_off)
            from read_parquet('{rollouts}') r join read_parquet('{analysis}') a using (_ng_task_index)
            group by 1 order by 1"""
    ).fetchall()
    assert joined == [(0, 0, 0), (1, 0, 0), (2, 1, 1)]
    mean = _sql(f"""select "mean/reward" from read_parquet('{run / "run_tasks.parquet"}')""").fetchall()
    assert [round(m, 6) for (m,) in mean] == [0.75, 0.0, 0.625]


def test_column_types_in_parquet(run: Path) -> None:
    schema = pl.read_parquet_schema(run / "run_rollouts.parquet")
    assert schema["_ng_task_index"] == pl.Int64 and schema["reward"] == pl.Float64
    assert schema["output_tokens"] == pl.Int64 and schema["cut_off"] == pl.Boolean
    assert schema["response_text"] == pl.String and schema["failure_class"] == pl.String


def test_out_folder_and_umask(run: Path, tmp_path: Path) -> None:
    source = tmp_path / "copy"
    shutil.copytree(run, source)
    out = tmp_path / "tables" / "here"
    previous = os.umask(0o027)
    try:
        done = gym(
            "eval", "export", "--rollouts", str(source / "run.jsonl"), "--format", "csv", "--out", str(out)
        )
    finally:
        os.umask(previous)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == ["run_analysis.csv", "run_analysis_summary.csv", "run_rollouts.csv", "run_tasks.csv"]
    assert {(p.stat().st_mode & 0o777) for p in out.iterdir()} == {0o640}
    assert (out / "run_rollouts.csv").read_bytes() == (run / "run_rollouts.csv").read_bytes()


def test_without_analysis_only_two_tables(run: Path, tmp_path: Path) -> None:
    for name in ("run.jsonl", "run_reward_profiling.jsonl"):
        shutil.copy(run / name, tmp_path / name)
    done = gym("eval", "export", "--rollouts", str(tmp_path / "run.jsonl"))
    assert done.returncode == 0, done.stderr
    assert "run 'gym eval analyze' first" in done.stdout
    assert sorted(p.name for p in tmp_path.glob("*.parquet")) == ["run_rollouts.parquet", "run_tasks.parquet"]
    assert pl.read_parquet(tmp_path / "run_rollouts.parquet")["failure_class"].null_count() == 11
