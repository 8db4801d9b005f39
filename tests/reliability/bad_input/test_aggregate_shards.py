"""``gym eval aggregate`` over shards, one of them torn by a crash: the torn line is left out, with a note."""

from __future__ import annotations

from pathlib import Path

import orjson

from rewardgym.io.jsonl import read_jsonl
from tests.reliability.bad_input.catalogue import gym
from tests.stubs.inprocess_stack import Stack


def test_a_torn_last_line_is_left_out_with_a_note(
    bad_input_stack: Stack, previous_run: Path, tmp_path: Path
) -> None:
    whole = (previous_run / "out/rollouts.jsonl").read_bytes().splitlines(keepends=True)
    (tmp_path / "a.jsonl").write_bytes(b"".join(whole[:3]))
    (tmp_path / "b.jsonl").write_bytes(b"".join(whole[3:]) + whole[0][:25])  # a crash cut the last line
    done = gym(
        ["eval", "aggregate", "--input", "a.jsonl,b.jsonl", "-o", "merged/all.jsonl",
         "--head-url", bad_input_stack.head_url],
        tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert f"b.jsonl:{len(whole) - 2} was cut short by a crash" in done.stdout
    merged = read_jsonl(tmp_path / "merged/all.jsonl")
    keys = [(r["_ng_task_index"], r["_ng_rollout_index"]) for r in merged]
    assert keys == sorted(keys) and len(keys) == len(whole) == 6
    assert merged == sorted(
        map(orjson.loads, whole), key=lambda r: (r["_ng_task_index"], r["_ng_rollout_index"])
    )
    assert (tmp_path / "merged/all_aggregate_metrics.json").exists()


def test_input_glob_and_the_closing_health_check(
    bad_input_stack: Stack, previous_run: Path, tmp_path: Path
) -> None:
    # NeMo Gym's spelling (--input-glob, or ++input_glob / ++output_jsonl_fpath) and its health-check flags.
    whole = (previous_run / "out/rollouts.jsonl").read_bytes().splitlines(keepends=True)
    (tmp_path / "s0.jsonl").write_bytes(b"".join(whole[:3]))
    (tmp_path / "s1.jsonl").write_bytes(b"".join(whole[3:]))
    head = ["--head-url", bad_input_stack.head_url]
    done = gym(
        ["eval", "aggregate", "--input-glob", "s*.jsonl", "-o", "m/all.jsonl", *head,
         "--health-check-ignore", "no_extracted_answer"],
        tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Rollout health: 6 checked" in done.stdout and "(ignored: no_extracted_answer)" in done.stdout
    assert (tmp_path / "m/all_quality_summary.json").exists()
    keys = gym(
        ["eval", "aggregate", *head, "++input_glob=s*.jsonl", "++output_jsonl_fpath=k/all.jsonl",
         "--no-health-check"],
        tmp_path,
    )  # fmt: skip
    assert keys.returncode == 0, keys.stdout + keys.stderr
    assert len(read_jsonl(tmp_path / "k/all.jsonl")) == 6
    assert "Rollout health" not in keys.stdout and not (tmp_path / "k/all_quality_summary.json").exists()
