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
from rewardgym.profile import ProfileObserver, Tuning, profile_files
from tests.analysis.helpers import inputs_for, rollout

# Masked rollouts leave repeats unequal: the profile warns, as NeMo Gym does; not what is tested here.
pytestmark = pytest.mark.filterwarnings("ignore:.*missing rollouts:UserWarning")


class _Hooked(ProfileObserver):
    row_hook = ROW_HOOK


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
    result = profile_files(inputs, rollouts, tuning=tuning, observer=_Hooked())
    assert len(result.row_parts) >= 1
    _assert_same_scan(rollouts, result.row_parts)


def test_profile_outputs_do_not_change_with_the_hook(tmp_path: Path) -> None:
    inputs, rollouts = _write(tmp_path, tasks=120)
    tuning = Tuning(workers=2, chunk_bytes=1 << 15, parallel_from=0)
    plain = profile_files(inputs, rollouts, tuning=tuning)
    assert plain.row_parts == ()
    before = {name: (tmp_path / name).read_bytes() for name in _OUTPUTS}
    hooked = profile_files(inputs, rollouts, tuning=tuning, observer=_Hooked())
    assert {name: (tmp_path / name).read_bytes() for name in _OUTPUTS} == before
    assert hooked.completion == plain.completion


def test_while_reading_runs_during_the_read(tmp_path: Path) -> None:
    inputs, rollouts = _write(tmp_path, tasks=20)
    calls: list[str] = []

    class Watching(ProfileObserver):
        def while_reading(self) -> None:
            calls.append("reading")

        def after_read(self, parts: tuple[object, ...], input_rows: int) -> None:
            calls.append(f"read {len(parts)} parts, {input_rows} input rows")

        def before_writing(self) -> None:
            calls.append("writing")

    result = profile_files(inputs, rollouts, observer=Watching())
    assert calls == ["reading", "read 0 parts, 80 input rows", "writing"]
    assert result.row_parts == ()


def test_agent_indices_of_chunks_with_several_agents_and_none() -> None:
    from rewardgym.analysis.extract import extract_row, pack_row
    from rewardgym.analysis.scan import _finish_rows, merge_parts

    def part(names: list[str | None], first: int) -> dict[str, object]:
        records = []
        for i, name in enumerate(names):
            row = rollout(first + i, 0)
            if name is None:
                del row["agent_ref"]
            else:
                row["agent_ref"] = {"name": name}
            record = pack_row(row)
            assert isinstance(record, bytes)
            fields = extract_row(row)
            assert not isinstance(fields, str) and fields[15] == name  # the tuple form names the agent
            records.append(record)
        return _finish_rows(records, list(range(len(records))))

    # Parts as two workers make them: each with its own name table (indices in order of first use).
    parts = [part(["b", None, "zz-a", "b", None], 0), part(["zz-a", "c"], 5), part([None, None], 7)]
    merged = merge_parts(Path("run.jsonl"), parts)
    assert merged.unreadable == []
    columns = merged.sorted().columns
    named = [columns.agents[i] if i >= 0 else None for i in columns.agent.tolist()]
    assert named == ["b", None, "zz-a", "b", None, "zz-a", "c", None, None]
    assert sorted(columns.agents) == sorted(set(columns.agents))


def test_an_index_beyond_64_bits_is_a_key_problem_not_a_crash() -> None:
    from rewardgym.analysis.extract import pack_row

    problem = pack_row(rollout(2**63, 0))
    assert isinstance(problem, str) and "_ng_task_index" in problem


def _variants() -> list[dict[str, object]]:
    """Rows of many layouts: every rule the per-layout record decides once (token keys and their types,
    the caps, the answer, the mask, the agent, ng_perf) and the response shapes it hands back."""
    rows: list[dict[str, object]] = []
    usages: list[dict[str, object] | None] = [
        {"input_tokens": 20, "output_tokens": 50, "total_tokens": 70},
        {"input_tokens": 20.0, "output_tokens": 50.5},
        {"prompt_tokens": 7, "completion_tokens": 9},
        {"input_tokens": None, "prompt_tokens": 7, "output_tokens": True, "completion_tokens": 3},
        {"total_tokens": 12, "_private": 1},
        {"input_tokens": 1, "output_tokens": 2, "total_tokens": "x"},
        {},
        None,
    ]
    texts = ["plain", "  padded  ", "", "\n"]
    for u, usage in enumerate(usages):
        for t, text in enumerate(texts):
            row = rollout(u * 10 + t, 0, text=text, extracted=[None, "", "  ", "B", 3][(u + t) % 5])
            response = row["response"]
            assert isinstance(response, dict)
            if usage is None:
                del response["usage"]
            else:
                response["usage"] = usage
            if t % 2:
                response["max_output_tokens"] = 64 if u % 2 else 64.0
            if u % 3 == 0:
                row["responses_create_params"] = {"max_tokens": 32} if t % 3 else {"max_output_tokens": None}
            if u % 4 == 1:
                row["ng_perf"] = {"num_turns": 3}
            if u % 4 == 2:
                row["agent_ref"] = "not a dict"
            if t == 3:
                row["mask_sample"] = u % 2 == 0
                del row["extracted_answer"]
            if u == 5:
                row["reward"] = True
            if u == 6:
                response["status"] = "incomplete"
                response["incomplete_details"] = {"reason": "length"}
            rows.append(row)
    odd = rollout(99, 0)  # a response the specialised path hands back: reasoning, a tool call, two parts
    odd["response"]["output"] = [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": " why "}]},
        {"type": "function_call", "name": "f", "arguments": "{}"},
        {"type": "message", "content": [{"type": "output_text", "text": "a"}, {"text": "b "}]},
    ]
    rows.append(odd)
    return rows


def test_the_fast_records_equal_the_general_extraction() -> None:
    """The per-layout record and ``pack_row`` (both generated from one template) against the general
    path that checks every rule as it goes, on rows of 33 layouts."""
    from rewardgym.analysis.extract import extract_general, layout_record, pack_row
    from rewardgym.profile.read.row_layouts import usage_of

    checked = 0
    for row in _variants():
        usage = usage_of(row)
        record = layout_record(row, usage)
        assert record is not None
        values = [*row.values(), *(usage.values() if usage is not None else ())]
        assert record(row, *values) == extract_general(row) == pack_row(row), row
        checked += 1
    assert checked == 33


def test_an_index_beyond_64_bits_is_a_key_problem_in_every_path() -> None:
    from rewardgym.analysis.extract import extract_general, layout_record, pack_row
    from rewardgym.profile.read.row_layouts import usage_of

    row = rollout(2**63, 0)
    usage = usage_of(row)
    record = layout_record(row, usage)
    assert record is not None
    values = [*row.values(), *(usage.values() if usage is not None else ())]
    problems = {record(row, *values), pack_row(row), extract_general(row)}
    assert len(problems) == 1 and "_ng_task_index" in str(problems.pop())


def test_hook_columns_equal_the_analysis_read_on_many_layouts(tmp_path: Path) -> None:
    rows = _variants()
    inputs, rollouts = tmp_path / "run_materialized_inputs.jsonl", tmp_path / "run.jsonl"
    keys = sorted({(int(r["_ng_task_index"]), k) for r in rows for k in (0, 1)})  # type: ignore[call-overload]
    inputs.write_bytes(
        b"".join(
            orjson.dumps({"_ng_task_index": t, "_ng_rollout_index": r, "agent_ref": {"name": "a"}}) + b"\n"
            for t, r in keys
        )
    )
    # Each row twice in a row (repeats 0 and 1): the second of a layout takes the compiled fast path.
    rollouts.write_bytes(
        b"".join(orjson.dumps({**row, "_ng_rollout_index": k}) + b"\n" for row in rows for k in (0, 1))
    )
    result = profile_files(inputs, rollouts, tuning=Tuning(workers=1), observer=_Hooked(), allow_partial=True)
    _assert_same_scan(rollouts, result.row_parts)


def test_scan_columns_are_the_rows_sorted_by_key(tmp_path: Path) -> None:
    """The scan's columns against a plain oracle: every row's extracted fields, sorted by (task, rollout);
    columns that hold one value throughout (filled, not gathered) and columns that vary."""
    from rewardgym.analysis.extract import FIELDS, extract_row

    _, rollouts = _write(tmp_path, tasks=50)
    rows = [orjson.loads(line) for line in rollouts.read_bytes().splitlines()]
    expected = sorted((extract_row(row) for row in rows), key=lambda f: (f[0], f[1]))
    columns = scan_rollouts(rollouts, workers=1).columns
    for position, name in enumerate(FIELDS):
        got = (
            [columns.agents[i] if i >= 0 else None for i in columns.agent.tolist()]
            if name == "agent"
            else getattr(columns, name).tolist()
        )
        want = [fields[position] for fields in expected]
        assert np.array_equal(np.array(got, dtype=object), np.array(want, dtype=object)) or (
            np.allclose(np.array(got, float), np.array(want, float), equal_nan=True)
        ), name
    assert np.all(columns.has_response) and np.all(columns.reasoning_chars[columns.tool_calls == 0] == 0)


def test_the_fast_sources_are_generated_from_the_one_description(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each rule of ``ROW_FIELDS`` is what every path renders: the general path and the usual one read the
    same keys, and a rule changed for one path only (here the layout path's token keys swapped) breaks
    the equality the test above holds — so that test would catch a path drifting from the others."""
    from dataclasses import replace

    from rewardgym.analysis import record_source
    from rewardgym.analysis.extract import _compile, extract_general
    from rewardgym.profile.read.row_layouts import usage_of

    general, usual = record_source.general_source(), record_source.usual_source()
    for rule in record_source.ROW_FIELDS:
        assert repr(rule.keys[0]) in general, rule.name
        assert repr(rule.keys[0]) in usual, rule.name
    swapped = replace(record_source.TOKENS_IN, keys=record_source.TOKENS_IN.keys[::-1])
    monkeypatch.setattr(record_source, "TOKENS_IN", swapped)
    differ = 0
    for row in _variants():
        usage = usage_of(row)
        source = record_source.layout_source(row, usage)
        assert source is not None
        values = [*row.values(), *(usage.values() if usage is not None else ())]
        differ += _compile(source)(row, *values) != extract_general(row)
    assert differ > 0
