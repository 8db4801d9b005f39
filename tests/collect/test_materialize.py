"""Materialization is byte-identical to NeMo Gym's and rejects bad input with file:line."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from rewardgym.collect.materialize import MaterializeOptions, PromptConfig, iter_materialized
from rewardgym.errors import DataError, UsageError
from tests.conftest import EXAMPLES, NG_OUTPUTS


def _materialize(path: Path, **kwargs: object) -> list[dict[str, object]]:
    return list(iter_materialized(path, MaterializeOptions(**kwargs)))  # type: ignore[arg-type]


def test_matches_nemo_gym_smoke_run_byte_for_byte() -> None:
    rows = _materialize(EXAMPLES / "mcqa" / "example.jsonl", agent_name="mcqa_simple_agent")
    ours = b"".join(orjson.dumps(r) + b"\n" for r in rows)
    assert ours == (NG_OUTPUTS / "smoke_5_materialized_inputs.jsonl").read_bytes()


def test_matches_nemo_gym_first_rows_of_repeated_run() -> None:
    """The shared 0.7.0 run (4 repeats) used a 500-row file whose first row differs from ours only by uuid."""
    rows = _materialize(EXAMPLES / "mcqa" / "example.jsonl", agent_name="mcqa_simple_agent", num_repeats=4)
    expected = [
        orjson.loads(line)
        for line in (NG_OUTPUTS / "materialized_inputs.first3.jsonl").read_bytes().splitlines()
    ]
    assert len(expected) == 3
    for ours, theirs in zip(rows[:3], expected, strict=True):
        assert theirs["uuid"] == f"{ours['uuid']}-rep000"
        assert list(ours) == list(theirs)
        assert {**ours, "uuid": None} == {**theirs, "uuid": None}
    assert [(r["_ng_task_index"], r["_ng_rollout_index"]) for r in rows[:6]] == [
        (0, 0),
        (0, 1),
        (0, 2),
        (0, 3),
        (1, 0),
        (1, 1),
    ]


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_nemo_unit_test_shape(tmp_path: Path) -> None:
    path = _write(tmp_path, [f'{{"responses_create_params":{{"input":[]}},"x":{i}}}' for i in range(5)])
    rows = _materialize(
        path,
        limit=3,
        num_repeats=2,
        add_seed=True,
        create_params_overrides={"temperature": 0.1},
        agent_name="my_agent",
    )
    assert [(r["_ng_task_index"], r["_ng_rollout_index"]) for r in rows] == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
        (2, 0),
        (2, 1),
    ]
    for row in rows:
        params = row["responses_create_params"]
        assert isinstance(params, dict)
        assert params["temperature"] == 0.1
        assert params["metadata"] == {"extra_body": f'{{"seed": {row["_ng_rollout_index"]}}}'}
        assert list(row) == [
            "responses_create_params",
            "x",
            "agent_ref",
            "_ng_task_index",
            "_ng_rollout_index",
        ]


def test_identical_lines_share_a_task_and_continue_numbering(tmp_path: Path) -> None:
    line = '{"responses_create_params":{"input":"q"},"agent_ref":{"name":"a"}}'
    other = '{"responses_create_params":{"input":"r"},"agent_ref":{"name":"a"}}'
    rows = _materialize(_write(tmp_path, [line, other, line]), num_repeats=2)
    assert [(r["_ng_task_index"], r["_ng_rollout_index"]) for r in rows] == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
        (0, 2),
        (0, 3),
    ]


def test_existing_task_index_and_agent_are_kept(tmp_path: Path) -> None:
    """With --agent-fill-missing (the default rewrites every row, see test_materialize_nemo_cases.py)."""
    line = '{"responses_create_params":{"input":"q"},"agent_ref":{"name":"mine"},"_ng_task_index":7}'
    rows = _materialize(_write(tmp_path, [line]), agent_name="other", agent_fill_missing=True)
    assert rows == [
        {
            "responses_create_params": {"input": "q"},
            "agent_ref": {"name": "mine"},
            "_ng_task_index": 7,
            "_ng_rollout_index": 0,
        }
    ]


def test_per_agent_repeats_with_default(tmp_path: Path) -> None:
    a = '{"responses_create_params":{"input":"q"},"agent_ref":{"name":"a"}}'
    b = '{"responses_create_params":{"input":"q"},"agent_ref":{"name":"b"}}'
    rows = _materialize(_write(tmp_path, [a, b]), num_repeats={"a": 3, "_default": 1})
    assert [r["agent_ref"] for r in rows] == [{"name": "a"}] * 3 + [{"name": "b"}]


def test_mapping_missing_agent_without_default(tmp_path: Path) -> None:
    a = '{"responses_create_params":{"input":"q"},"agent_ref":{"name":"a"}}'
    b = '{"responses_create_params":{"input":"q"},"agent_ref":{"name":"b"}}'
    with pytest.raises(UsageError, match=r"no entry for agent\(s\) 'b' \(first at line 2\)"):
        _materialize(_write(tmp_path, [a, b]), num_repeats={"a": 3})


@pytest.mark.parametrize("repeats", [0, -1, {"a": 0}])
def test_repeats_below_one_are_rejected(tmp_path: Path, repeats: object) -> None:
    with pytest.raises(UsageError, match=">= 1"):
        _materialize(_write(tmp_path, ['{"responses_create_params":{"input":"q"}}']), num_repeats=repeats)


def test_rows_without_agent_are_reported_together(tmp_path: Path) -> None:
    line = '{"responses_create_params":{"input":"q"}}'
    with pytest.raises(DataError, match=r"2 row\(s\) have no agent_ref.name \(lines 1, 2\).*--agent"):
        _materialize(_write(tmp_path, [line, line]))


def test_row_without_create_params_names_line(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"in\.jsonl:2: row has no 'responses_create_params'"):
        _materialize(
            _write(tmp_path, ['{"responses_create_params":{"input":"q"}}', '{"x": 1}']), agent_name="a"
        )


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"in\.jsonl:2: malformed JSON"):
        _materialize(_write(tmp_path, ['{"responses_create_params":{"input":"q"}}', "{oops"]), agent_name="a")


def test_missing_input_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"Input file not found: .*nope\.jsonl' \(--input\)"):
        _materialize(tmp_path / "nope.jsonl", agent_name="a")


def test_prompt_config_renders_user_and_system(tmp_path: Path) -> None:
    path = _write(tmp_path, ['{"responses_create_params":{"temperature":0.5},"question":"2+2?"}'])
    rows = _materialize(
        path, agent_name="a", prompt_config=PromptConfig(user="Q: {question}", system="Be brief.")
    )
    assert rows[0]["responses_create_params"] == {
        "temperature": 0.5,
        "input": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Q: 2+2?"}],
    }
    assert list(rows[0]["responses_create_params"]) == ["temperature", "input"]


def test_prompt_config_refuses_rows_with_input(tmp_path: Path) -> None:
    path = _write(tmp_path, ['{"responses_create_params":{"input":"x"}}'])
    with pytest.raises(DataError, match=r"in\.jsonl:1: row already has responses_create_params\.input"):
        _materialize(path, agent_name="a", prompt_config=PromptConfig(user="{x}"))


def test_agent_map_sends_named_rows_to_the_mapped_agent(tmp_path: Path) -> None:
    lines = [
        '{"responses_create_params": {"input": "a"}, "agent_ref": {"type": "responses_api_agents", '
        '"name": "x"}}',
        '{"responses_create_params": {"input": "b"}, "agent_ref": {"name": "y"}}',
    ]
    rows = _materialize(_write(tmp_path, lines), agent_map={"x": "served"})
    assert [r["agent_ref"] for r in rows] == [
        {"type": "responses_api_agents", "name": "served"},
        {"name": "y"},
    ]
    rows = _materialize(_write(tmp_path, lines), agent_map={"x": "served"}, num_repeats={"served": 2, "y": 1})
    assert [orjson.loads(orjson.dumps(r))["agent_ref"]["name"] for r in rows] == ["served", "served", "y"]
