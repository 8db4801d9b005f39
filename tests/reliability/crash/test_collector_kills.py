"""SIGKILL ``gym eval run`` at random moments — and in the middle of writing a line — then ``--resume``.

After every kill the run is resumed; at the end the rollouts file holds exactly the materialized keys, each
once, every line valid JSON, every reward the agent's. The agent (:mod:`tests.stubs.bulky_agent`, its own
process) answers 512 KB results so that writing a line spans many page copies, which a SIGKILL interrupts:
the suite requires at least two torn lines, and that each resume noticed one. (The 5-kill test of
``tests/collect/test_cli_run.py`` kills at random times only; the 20-kill run is
``benchmarks/reliability/run_all.py``.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.stubs.bulky_agent import BulkyAgent, start_bulky_agent
from tests.stubs.kill_harness import kill_and_resume


@pytest.fixture
def agent() -> Iterator[BulkyAgent]:
    with start_bulky_agent("--pad-bytes", str(512 * 1024), "--delay-ms", "150") as running:
        yield running


def test_kill_9_mid_write_and_at_random_moments_then_resume(tmp_path: Path, agent: BulkyAgent) -> None:
    # ~13 rollouts/s (2 in flight, 150 ms each): the 120 rollouts outlast the 8 kills.
    report = kill_and_resume(
        tmp_path, agent.url, kills=8, min_torn=2, tasks=40, repeats=3, seed=7, concurrency=2
    )
    assert report.kills >= 8, report
    assert report.mid_write_kills >= 4 and report.timed_kills >= 1
    assert report.torn_lines >= 2, f"no kill tore a line: {report}"
    assert report.torn_noticed >= 1  # a resume reported the torn line and ran that rollout again
    assert report.rollouts == report.expected == 120
    assert all("Traceback" not in text for text in report.outputs)
