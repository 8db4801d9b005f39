"""``profile --report`` parses the rollouts once: the analysis columns come from the profile's own reader
(:data:`rewardgym.analysis.scan.ROW_HOOK`) and must equal those of the analysis' own read, whichever
process read which chunk; the profile's outputs must not change with the hook."""

from __future__ import annotations

import random
from dataclasses import fields
from pathlib import Path

import numpy as np
import orjson
import pytest

from rewardgym.analysis.scan import ROW_HOOK, scan_from_parts, scan_rollouts
from rewardgym.profile import Tuning, profile_files
from tests.analysis.helpers import inputs_for, rollout

# Masked rollouts leave repeats unequal: the profile warns, as NeMo Gym does; not what is tested here.
pytestmark = pytest.mark.filterwarnings("ignore:.*missing rollouts:UserWarning")

_OUTPUTS = ("run_reward_profiling.jsonl", "run_agent_metrics.json", "run_repeat_level_metrics.json")


def _write(tmp_path: Path, tasks: int = 300, repeats: int = 4) -> tuple[Path, Path]:
    rng = random.Random(7)
    rows = []
    for t in range(tasks):
        for r in range(repeats):
            kind = rng.randrange(5)
            if kind == 0:  # a length-capped response with reasoning and a tool call
                row = rollout(t, r, reward=0.0, status="incomplete", out_tokens=99, cap=99, extracted=None)
                row["response"]["output"] = [
                    {"type": "reasoning", "summary": [{"type": "summary_text", "text": " thinking "}]},
                    {"type": "function_call", "name": "f", "arguments": "{}"},
                    *row["response"]["output"],
                ]
            elif kind == 1:
                row = rollout(t, r, reward=rng.random(), text=f"  same text {t}  ", mask_sample=r == 0)
            elif kind == 2:  # another layout: no extracted answer, an ng_perf block
                row = rollout(t, r, reward=float(rng.randrange(2)), ng_perf={"num_turns": 2})
                del row["extracted_answer"]
            else:
                row = rollout(t, r, reward=float(rng.randrange(2)), text="x" * rng.randrange(1, 400))
            rows.append(row)
    rng.shuffle(rows)  # out of (task, rollout) order: the scan sorts
    inputs, rollouts = tmp_path / "run_materialized_inputs.jsonl", tmp_path / "run.jsonl"
    inputs.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in inputs_for(tasks, repeats)))
    rollouts.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return inputs, rollouts


def _assert_same_scan(expected_path: Path, got_parts: tuple[object, ...]) -> None:
    expected = scan_rollouts(expected_path, workers=1)
    got = scan_from_parts(expected_path, got_parts)
    assert got.unreadable == expected.unreadable == []
    assert got.blank_lines == expected.blank_lines == 0
    assert got.columns.agents == expected.columns.agents
    for field in fields(expected.columns):
        if field.name != "agents":
            assert np.array_equal(
                getattr(got.columns, field.name), getattr(expected.columns, field.name), equal_nan=True
            ), field.name


@pytest.mark.parametrize(
    "tuning",
    [
        Tuning(workers=1),  # read in this process, several chunks
        Tuning(workers=2, chunk_bytes=1 << 16, parallel_from=0),  # forked workers, many chunks
    ],
    ids=["in-process", "workers"],
)
def test_hook_columns_equal_the_analysis_read(tmp_path: Path, tuning: Tuning) -> None:
    inputs, rollouts = _write(tmp_path)
    result = profile_files(inputs, rollouts, tuning=tuning, row_hook=ROW_HOOK)
    assert len(result.row_parts) >= 1
    _assert_same_scan(rollouts, result.row_parts)


def test_profile_outputs_do_not_change_with_the_hook(tmp_path: Path) -> None:
    inputs, rollouts = _write(tmp_path, tasks=120)
    tuning = Tuning(workers=2, chunk_bytes=1 << 15, parallel_from=0)
    plain = profile_files(inputs, rollouts, tuning=tuning)
    assert plain.row_parts == ()
    before = {name: (tmp_path / name).read_bytes() for name in _OUTPUTS}
    hooked = profile_files(inputs, rollouts, tuning=tuning, row_hook=ROW_HOOK)
    assert {name: (tmp_path / name).read_bytes() for name in _OUTPUTS} == before
    assert hooked.completion == plain.completion


def test_while_reading_runs_during_the_read(tmp_path: Path) -> None:
    inputs, rollouts = _write(tmp_path, tasks=20)
    calls: list[str] = []
    profile_files(inputs, rollouts, while_reading=lambda: calls.append("called"))
    assert calls == ["called"]


def test_agent_indices_of_a_chunk_with_several_agents_and_none() -> None:
    from rewardgym.analysis.extract import extract_row
    from rewardgym.analysis.scan import _to_arrays

    names = ["b", None, "a", "b", None]
    rows = []
    for i, name in enumerate(names):
        row = rollout(i, 0)
        if name is None:
            del row["agent_ref"]
        else:
            row["agent_ref"] = {"name": name}
        fields = extract_row(row)
        assert not isinstance(fields, str)
        rows.append(fields)
    arrays = _to_arrays(rows)
    assert arrays["agent_names"] == ["a", "b"]
    assert arrays["agent"].tolist() == [1, -1, 0, 1, -1]
    single = _to_arrays(rows[:1] * 3)
    assert single["agent_names"] == ["b"] and single["agent"].tolist() == [0, 0, 0]
    nobody = _to_arrays([rows[1]] * 2)
    assert nobody["agent_names"] == [] and nobody["agent"].tolist() == [-1, -1]
