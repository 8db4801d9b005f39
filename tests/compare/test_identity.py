"""What makes two rows the same task, and how tasks that cannot be matched without guessing are kept out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest

from rewardgym.compare.identity import canonical, content_key, field_key, preview
from rewardgym.compare.match import match_runs
from rewardgym.compare.runs import KeyRule, read_run
from rewardgym.errors import DataError
from tests.compare.helpers import task_rows, write_run


def _row(extra_body: str | None = None, **fields: object) -> dict[str, object]:
    params: dict[str, object] = {"input": "q", "temperature": 1.0}
    if extra_body is not None:
        params["metadata"] = {"extra_body": extra_body}
    return {"responses_create_params": params, "agent_ref": {"name": "a"}, **fields}


def test_content_ignores_indices_and_per_rollout_seeds() -> None:
    plain = content_key(_row())
    assert content_key(_row(_ng_task_index=3, _ng_rollout_index=5, _ng_environment_server="x")) == plain
    assert content_key(_row('{"seed": 4}')) == plain
    assert content_key(_row('{"seed": 4, "top_k": 5}')) == content_key(_row('{"top_k":5}'))
    assert content_key(_row('{"top_k": 5}')) != plain
    assert content_key(_row(expected="B")) != plain
    assert canonical(_row('{"seed": 1}')) == _row()


def test_ignored_paths_and_field_keys() -> None:
    other = _row()
    other["responses_create_params"] = {"input": "q", "temperature": 0.2}
    assert content_key(other) != content_key(_row())
    ignore = [("responses_create_params", "temperature")]
    assert content_key(other, ignore) == content_key(_row(), ignore)
    assert content_key(_row(), [("absent", "path")]) == content_key(_row())
    key, shown = field_key(_row(meta={"id": 7}), ("meta", "id"), "f:1")
    assert shown == "7" and key == field_key({"meta": {"id": 7}}, ("meta", "id"), "f:2")[0]
    with pytest.raises(DataError, match=r"f:9: the row has no field 'meta.id' \(--task-key\)"):
        field_key(_row(meta={}), ("meta", "id"), "f:9")


def test_preview_is_the_last_user_message() -> None:
    user = {"role": "user", "content": [{"type": "input_text", "text": "a\n b"}]}
    row = {"responses_create_params": {"input": [{"role": "system", "content": "be brief"}, user]}}
    assert preview(row) == "a b"
    assert preview({"responses_create_params": {"input": "x" * 500}}).endswith("…")


def test_a_key_shared_by_two_tasks_is_kept_out_and_reported(tmp_path: Path) -> None:
    rows = task_rows(5, uuid=True)
    rows[3]["uuid"] = "id-1"  # two tasks claim id-1
    outcomes = [[1, 0]] * 5
    a = read_run(write_run(tmp_path / "a", "a", rows, outcomes), None, KeyRule(field=("uuid",)))
    b = read_run(
        write_run(tmp_path / "b", "b", task_rows(5, uuid=True), outcomes), None, KeyRule(field=("uuid",))
    )
    assert a.ambiguous == [{"tasks": [1, 3], "shown": "id-1"}]
    assert a.task.tolist() == [0, 2, 4]
    matching = match_runs([a, b])
    assert matching.tasks == 3
    assert matching.unmatched[1]["tasks"] == 2  # b's id-1 and id-3 have no single partner in a
    assert [e["shown"] for e in matching.unmatched[1]["examples"]] == ["id-1", "id-3"]
    assert np.array_equal(b.task[matching.position[1]], [0, 2, 4])


def test_profile_rows_need_sample_and_rollout_infos(tmp_path: Path) -> None:
    bad = tmp_path / "x_reward_profiling.jsonl"
    bad.write_bytes(orjson.dumps({"_ng_task_index": 0, "sample": {}}) + b"\n")
    with pytest.raises(DataError, match=r"x_reward_profiling.jsonl:1: not a reward profile row"):
        read_run(bad, None, KeyRule())


def test_a_nested_task_index_does_not_hide_tasks(tmp_path: Path) -> None:
    """The inputs are skimmed by their last ``"_ng_task_index":`` text; a nested key of that name (after
    the real one) makes every row look like task 0 — the re-read without skimming still finds each task."""
    rows = [
        {"_ng_task_index": t, "responses_create_params": {"input": f"q{t}"}, "meta": {"_ng_task_index": 0}}
        for t in range(4)
    ]
    run = write_run(tmp_path / "a", "a", rows, [[1, 0]] * 4, seed=False)
    text = (tmp_path / "a" / "a_materialized_inputs.jsonl").read_text()
    assert text.count('"meta":{"_ng_task_index":0}') == 8
    tasks = read_run(run, None, KeyRule())
    assert tasks.task.tolist() == [0, 1, 2, 3]
    assert tasks.shown == ["q0", "q1", "q2", "q3"]
