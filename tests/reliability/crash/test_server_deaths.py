"""A server dies during a collection: the run names it, records none of the interrupted rollouts as failures,
says how to resume — and the resume completes the exact key set. Killing the collector of a serving run
leaves no server behind (process table).

The upstream is the fault upstream with 30 ms latency and no fault, so a run is still going when a server is
killed. ``--no-serve`` runs watch the head registry (:class:`rewardgym.collect.watch.HeadWatch`); serving
runs watch their own children. Scenario: :func:`tests.stubs.death_harness.kill_server_during_run`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.stubs.bulky_agent import start_bulky_agent
from tests.stubs.death_harness import DeathReport, kill_server_during_run, lines, resume_line
from tests.stubs.fault_upstream import FaultUpstream, start_fault_upstream
from tests.stubs.processes import GymProcess, kill_marked, new_marker, no_marked_processes, poll
from tests.stubs.reliability_stack import API_KEY, check_partition, env_args, run_args, write_mcqa_rows


@pytest.fixture
def upstream() -> Iterator[FaultUpstream]:
    with start_fault_upstream("--latency-ms", "30") as running:
        yield running


def check_death(report: DeathReport) -> None:
    text = report.collector_text
    assert report.named, text[-3000:]
    assert report.collector_code == 1, text[-3000:]
    assert "not recorded as failures" in text and "plus --resume" in text
    assert "Traceback" not in text and API_KEY not in text
    assert not report.orphans, f"processes outlived the stack: {report.orphans}"
    assert report.partial is not None
    assert report.partial.failed == 0, "a rollout interrupted by the dead server was recorded as a failure"
    assert 20 <= report.partial.succeeded < report.total
    assert report.resumed is not None
    assert report.resumed.code == 0, report.resumed.output[-3000:]
    assert resume_line(report)
    assert report.final is not None
    assert report.final.succeeded == report.total and report.final.failed == 0


@pytest.mark.parametrize("victim", ["policy_model", "mcqa", "mcqa_simple_agent"])
def test_no_serve_run_names_the_dead_server_and_resumes(
    tmp_path: Path, upstream: FaultUpstream, victim: str
) -> None:
    report = kill_server_during_run(tmp_path, upstream.url, victim, serve=False)
    check_death(report)
    assert report.env_code == 1 and f"server '{victim}' exited unexpectedly" in report.env_text


def test_serving_run_names_the_dead_server_and_resumes(tmp_path: Path, upstream: FaultUpstream) -> None:
    report = kill_server_during_run(tmp_path, upstream.url, "mcqa_simple_agent", serve=True)
    check_death(report)
    assert "exited unexpectedly (exit code -9)" in report.collector_text


def test_killing_a_serving_collector_leaves_no_server_behind(tmp_path: Path, upstream: FaultUpstream) -> None:
    marker = new_marker()
    write_mcqa_rows(tmp_path / "in.jsonl", 100)
    out = tmp_path / "out" / "rollouts.jsonl"
    args = run_args(out, input_path=tmp_path / "in.jsonl", concurrency=8, repeats=4)
    run = GymProcess([*args, *env_args(upstream.url, tmp_path / "logs")], cwd=tmp_path, marker=marker)
    try:
        assert poll(lambda: lines(out) >= 10, 180), run.text
        assert len(no_marked_processes(marker, timeout=0)) >= 4  # the collector and its three servers
        run.proc.kill()
        run.finish(timeout=30)
        survivors = no_marked_processes(marker, timeout=15)
        assert not survivors, f"orphans: {survivors}"
        assert check_partition(out.parent, complete=False).failed == 0
    finally:
        kill_marked(marker)


def test_a_run_stopped_by_a_dead_server_exits_non_zero(tmp_path: Path) -> None:
    rows = "".join(f'{{"responses_create_params": {{"input": "q{i}"}}}}\n' for i in range(400))
    (tmp_path / "in.jsonl").write_text(rows)
    out = tmp_path / "out" / "rollouts.jsonl"
    with start_bulky_agent("--pad-bytes", "10", "--delay-ms", "50") as agent:
        args = [
            "eval",
            "run",
            "--no-serve",
            "--head-url",
            agent.url,
            "--input",
            "in.jsonl",
            "--agent",
            "agent",
        ]
        run = GymProcess([*args, "--output", str(out), "--concurrency", "4"], cwd=tmp_path)
        assert poll(lambda: lines(out) >= 5, 60), run.text
        agent.proc.kill()  # the agent is also the head registry here
        code = run.finish(timeout=60)
    assert "Stopped: the head registry" in run.text and "plus --resume" in run.text
    assert code == 1
