"""At scale ``analyze_files`` writes ``<stem>_rollout_verdicts.jsonl`` from a forked child while it writes
the other files; every file must be byte-identical to the in-process path."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from rewardgym.analysis import analyze_files, api
from tests.analysis.helpers import rollout, write

_FILES = ("run_analysis.json", "run_rollout_verdicts.jsonl", "run_quality_summary.json", "run_report.html")


def _rows() -> list[dict[str, object]]:
    rows = [rollout(t, r, reward=float((t + r) % 2), text=f"t{t}r{r}") for t in range(60) for r in range(4)]
    rows += [rollout(60, 0, reward=7.0), rollout(60, 0), rollout(61, 0, status="incomplete", cap=50, text="")]
    return rows


def test_forked_verdicts_equal_the_in_process_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here, forked = tmp_path / "here", tmp_path / "forked"
    for folder in (here, forked):
        folder.mkdir()
        write(folder / "run.jsonl", _rows())
    analyze_files(None, here / "run.jsonl")
    monkeypatch.setattr(api, "FORK_FROM", 1)
    started: list[int | None] = []
    real_start = api._start

    def start(job: Callable[[], None]) -> int | None:
        pid = real_start(job)
        started.append(pid)
        return pid

    monkeypatch.setattr(api, "_start", start)
    analyze_files(None, forked / "run.jsonl")
    assert started and started[0] is not None  # the child did run
    for name in _FILES:  # the analysis and the report name the rollouts file: its folder differs
        expected = (here / name).read_bytes().replace(str(here).encode(), str(forked).encode())
        assert (forked / name).read_bytes() == expected, name
    assert not [p for p in forked.iterdir() if p.name not in (*_FILES, "run.jsonl")]  # no temp file left
    shutil.rmtree(here)
