"""``profile --report`` at scale analyzes in a forked child while the profile finishes
(:mod:`rewardgym.analysis.profile_report`): its files must equal the serial path's byte for byte, a failure in
the child must surface as the serial path's error with no file half-written, and a profile that fails
after the fork must leave no analysis file at all."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import orjson
import pytest

from rewardgym.analysis.profile_report import finish_report, profile_and_report
from rewardgym.errors import DataError
from tests.analysis.helpers import inputs_for, rollout

_PROFILE = ("run_reward_profiling.jsonl", "run_agent_metrics.json", "run_repeat_level_metrics.json")
_ANALYSIS = ("run_analysis.json", "run_rollout_verdicts.jsonl", "run_quality_summary.json", "run_report.html")
_INPUTS = ("run_materialized_inputs.jsonl", "run.jsonl")


def _write(
    folder: Path, tasks: int = 80, repeats: int = 4, extra: tuple[dict[str, object], ...] = ()
) -> None:
    folder.mkdir()
    rows = [
        rollout(t, r, reward=float((t * 7 + r) % 3 == 0), text=f"t{t} r{r}" * (1 + t % 5))
        for t in range(tasks)
        for r in range(repeats)
    ]
    rows.reverse()  # out of (task, rollout) order: the analysis sorts
    rows[5] = rollout(rows[5]["_ng_task_index"], rows[5]["_ng_rollout_index"], status="incomplete", cap=50)
    (folder / _INPUTS[0]).write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in inputs_for(tasks, repeats)))
    (folder / _INPUTS[1]).write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [*rows, *extra]))
    for name, when in zip(_INPUTS, (1_000_000, 1_000_090), strict=True):  # the run's wall time: fixed
        os.utime(folder / name, (when, when))


def _run(folder: Path, overlap: bool) -> list[str]:
    _, report = profile_and_report(folder / _INPUTS[0], folder / _INPUTS[1], overlap=overlap)
    assert (report.child is not None) == overlap  # the path asked for is the path taken
    return finish_report(report)


def _stable(data: bytes, folder: Path) -> bytes:
    """The bytes with the folder (named in the analysis and the page) and the page's minute stamp fixed."""
    data = data.replace(str(folder).encode(), b"<folder>")
    return re.sub(rb"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", b"generated <when>", data)


def test_overlapped_report_equals_the_serial_one(tmp_path: Path) -> None:
    serial, overlapped = tmp_path / "serial", tmp_path / "overlapped"
    _write(serial)
    _write(overlapped)
    serial_lines = _run(serial, overlap=False)
    overlapped_lines = _run(overlapped, overlap=True)
    assert [line.replace(str(overlapped), "<f>") for line in overlapped_lines] == [
        line.replace(str(serial), "<f>") for line in serial_lines
    ]
    assert any(line.startswith("Health: ") for line in overlapped_lines)
    for name in (*_PROFILE, *_ANALYSIS):
        got = _stable((overlapped / name).read_bytes(), overlapped)
        assert got == _stable((serial / name).read_bytes(), serial), name
    assert sorted(p.name for p in overlapped.iterdir()) == sorted((*_INPUTS, *_PROFILE, *_ANALYSIS))


@pytest.mark.parametrize("overlap", [False, True])
def test_a_failing_analysis_is_the_serial_error_with_nothing_half_written(
    tmp_path: Path, overlap: bool
) -> None:
    folder = tmp_path / "run"
    _write(folder)
    (folder / "run_quality_summary.json").mkdir()  # a real fault: a directory in the way of one output
    with pytest.raises(DataError) as raised:
        _run(folder, overlap=overlap)
    message = str(raised.value)
    assert "run_quality_summary.json" in message and "\n" not in message
    # Every output is checked before the profile reads a byte (issue 22): nothing is written at all.
    assert sorted(p.name for p in folder.iterdir()) == sorted((*_INPUTS, "run_quality_summary.json"))


def test_both_paths_fail_alike(tmp_path: Path) -> None:
    messages = []
    for overlap in (False, True):
        folder = tmp_path / str(overlap)
        _write(folder)
        (folder / "run_quality_summary.json").mkdir()
        with pytest.raises(DataError) as raised:
            _run(folder, overlap=overlap)
        messages.append(str(raised.value).replace(str(folder), "<f>"))
    assert messages[0] == messages[1]


def test_a_profile_failing_after_the_fork_leaves_no_analysis_file(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    _write(folder, extra=(rollout(500, 0),))  # a rollout of a task the inputs do not have
    with pytest.raises(DataError, match="500"):
        profile_and_report(folder / _INPUTS[0], folder / _INPUTS[1], overlap=True)
    assert sorted(p.name for p in folder.iterdir()) == sorted(_INPUTS)


def test_a_killed_child_is_followed_by_the_serial_analysis(tmp_path: Path) -> None:
    expected, killed = tmp_path / "expected", tmp_path / "killed"
    _write(expected)
    _write(killed)
    _run(expected, overlap=False)
    _, report = profile_and_report(killed / _INPUTS[0], killed / _INPUTS[1], overlap=True)
    assert report.child is not None
    os.kill(report.child.pid, signal.SIGKILL)  # a real fault: it never answers
    lines = finish_report(report)
    assert any(line.startswith("Health: ") for line in lines)
    for name in (*_PROFILE, *_ANALYSIS):
        got = _stable((killed / name).read_bytes(), killed)
        assert got == _stable((expected / name).read_bytes(), expected), name
    assert sorted(p.name for p in killed.iterdir()) == sorted((*_INPUTS, *_PROFILE, *_ANALYSIS))


def test_the_page_data_written_in_pieces_is_the_whole_payload_dumped(tmp_path: Path) -> None:
    """The report's data block, written a column at a time, against the one-piece dump of the same
    payload (orjson, then "<" escaped): byte for byte, with "<" in a response text."""
    import numpy as np

    from rewardgym.analysis import analyze_files
    from rewardgym.analysis.report import _data, _task_flags
    from rewardgym.analysis.report_tasks import TaskInput
    from rewardgym.profile import BAND_LABELS

    rows = [rollout(t, r, reward=float(r % 2), text=f"</script><!-- {t}") for t in range(6) for r in range(3)]
    (tmp_path / "run.jsonl").write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    result = analyze_files(None, tmp_path / "run.jsonl", report=False)
    analysis, columns = result.analysis, result.scan.columns
    texts = {0: "a < b", 4: "</script>"}
    p = analysis.passes
    settle = analysis.repeats_to_settle
    assert settle is not None
    more = {"more": np.where(np.isfinite(settle), np.round(settle), -1).astype(np.int64)}
    payload = {
        "band_labels": list(BAND_LABELS),
        "tasks": {
            "t": p.task, "n": p.n, "s": p.passes, "rate": np.round(p.rate, 4), "lo": np.round(p.low, 4),
            "hi": np.round(p.high, 4), "band": p.band, "settled": p.settled.astype(np.int8),
            "pe": np.round(analysis.p_all_equal, 3), "tok": np.round(analysis.mean_tokens, 1),
            "tps": np.round(analysis.tokens_per_solve, 1), "flags": _task_flags(analysis, columns),
            "ro": np.append(np.searchsorted(columns.task, p.task), len(columns)).astype(np.int64),
            **more,
        },
        "rollouts": {
            "r": columns.rollout, "w": np.round(columns.reward, 4), "p": analysis.passed.astype(np.int8),
            "o": columns.output_tokens, "c": columns.cut_off.astype(np.int8),
            "h": analysis.health.unhealthy.astype(np.int8), "l": columns.line,
        },
        "texts": {str(k): v for k, v in texts.items()},
        "row_task": {str(k): int(analysis.task_pos[k]) for k in texts},
        "inputs": {"q": {"1": "<b>?"}, "m": {"1": "user: <b>?"}, "f": {"1": "{}"}},
    }  # fmt: skip
    whole = orjson.dumps(payload, option=orjson.OPT_SERIALIZE_NUMPY).replace(b"<", b"\\u003c")
    inputs = {1: TaskInput("<b>?", "user: <b>?", "{}")}
    assert b"".join(_data(analysis, columns, texts, inputs)) == whole
    assert b"</script>" not in whole
