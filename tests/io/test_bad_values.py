"""Values JSON readers disagree on are named by file:line — NaN / Infinity / numbers beyond a
double (Python's ``json`` reads them, orjson does not) and nesting deeper than orjson can write back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from rewardgym.errors import DataError
from rewardgym.io.jsonl import MAX_DEPTH, nesting_depth, read_jsonl
from rewardgym.profile import profile_files


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"reward": NaN}', "NaN is not valid JSON (numbers must be finite"),
        ('{"a": [1, Infinity]}', "Infinity is not valid JSON"),
        ('{"a": {"b": -Infinity}}', "-Infinity is not valid JSON"),
        ('{"reward": 1e999}', "the number 1e999 is too large for a double"),
        ('{"reward": nan}', "malformed JSON (invalid literal"),  # not a JavaScript constant: just malformed
    ],
)
def test_non_finite_numbers_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text('{"ok": 1}\n' + text + "\n")
    with pytest.raises(
        DataError, match="^" + str(path) + ":2: " + message.replace("(", r"\(").replace("[", r"\[")
    ):
        read_jsonl(path)


def _nested(depth: int) -> str:
    """A row nested ``depth`` levels deep (the row itself is level 1)."""
    return '{"a":' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


def test_nesting_is_refused_where_orjson_could_not_write_it_back(tmp_path: Path) -> None:
    deepest = orjson.loads(_nested(MAX_DEPTH))
    assert nesting_depth(deepest) == MAX_DEPTH
    orjson.dumps(deepest)  # still writable
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(orjson.loads(_nested(MAX_DEPTH + 1)))
    path = tmp_path / "in.jsonl"
    path.write_text(_nested(MAX_DEPTH) + "\n" + _nested(300) + "\n")
    with pytest.raises(DataError, match=rf"^{path}:2: nested 300 levels deep; at most 254 levels"):
        read_jsonl(path)
    path.write_text('{"text": "' + "[" * 400 + '"}\n')  # brackets in a string are not nesting
    assert read_jsonl(path) == [{"text": "[" * 400}]


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_bytes(b"".join((r if isinstance(r, bytes) else orjson.dumps(r)) + b"\n" for r in rows))
    return path


def test_the_profiler_names_non_finite_numbers_and_deep_rows(tmp_path: Path) -> None:
    row = {"q": 1, "agent_ref": {"name": "a"}, "_ng_task_index": 0, "_ng_rollout_index": 0}
    inputs = _write(tmp_path / "r_materialized_inputs.jsonl", [row])
    rollouts = _write(
        tmp_path / "r.jsonl", [b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": Infinity}']
    )
    with pytest.raises(DataError, match=rf"^{rollouts}:1: Infinity is not valid JSON"):
        profile_files(inputs, rollouts)
    deep = _nested(300)[:-1] + ',"agent_ref":{"name":"a"},"_ng_task_index":0,"_ng_rollout_index":0}'
    _write(inputs, [deep.encode()])
    _write(rollouts, [{"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1.0}])
    with pytest.raises(DataError, match=rf"^{inputs}:1: nested 300 levels deep"):
        profile_files(inputs, rollouts)
    # A reward kept as written (the NeMo Gym opt-in) must be writable too: no traceback from the writer.
    _write(inputs, [row])
    reward = "[" * 280 + "]" * 280
    _write(rollouts, [b'{"_ng_task_index":0,"_ng_rollout_index":0,"reward":%s}' % reward.encode()])
    with pytest.raises(DataError, match=rf"^{rollouts}:1: 'reward' is nested more than 253 levels deep"):
        profile_files(inputs, rollouts, allow_non_numeric_rewards=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl", "r_materialized_inputs.jsonl"]
