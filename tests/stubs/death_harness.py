"""Kill one server during a collection, then resume (shared by the crash tests and `benchmarks/reliability`).

:func:`kill_server_during_run` runs mcqa + simple_agent + vllm_model → ``upstream`` either under ``gym env
start`` with a ``--no-serve`` collector (``serve=False``) or inside a serving ``gym eval run``
(``serve=True``), SIGKILLs ``victim`` once ``after`` rollouts are stored, lets the collector stop, checks
the process table, restarts what is needed and resumes; :class:`DeathReport` holds what happened.
"""

from __future__ import annotations

import os
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.stubs.processes import (
    GymProcess,
    describe,
    instances,
    kill_marked,
    new_marker,
    no_marked_processes,
    poll,
    start_env,
)
from tests.stubs.reliability_stack import (
    Finished,
    Partition,
    check_partition,
    env_args,
    gym,
    run_args,
    write_mcqa_rows,
)


@dataclass
class DeathReport:
    victim: str
    serve: bool
    total: int
    stop_s: float = 0.0
    """From the SIGKILL to the collector's exit."""
    collector_code: int = 0
    collector_text: str = ""
    env_code: int | None = None
    env_text: str = ""
    orphans: list[str] = field(default_factory=list)
    partial: Partition | None = None
    resumed: Finished | None = None
    final: Partition | None = None

    @property
    def named(self) -> bool:
        """The collector's output names the dead server as the reason it stopped."""
        stopped = [line for line in self.collector_text.splitlines() if line.startswith("Stopped: ")]
        pattern = rf"server '{re.escape(self.victim)}' (\(\w+\) exited|exited unexpectedly|at \S+ refuses)"
        return any(re.search(pattern, line) for line in stopped)


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def started_pid(log: Path) -> int:
    """The pid a server child logged at start-up (``Started server process [pid]``)."""
    match = re.search(r"Started server process \[(\d+)\]", log.read_text(errors="replace"))
    assert match, log.read_text(errors="replace")[-2000:]
    return int(match[1])


def kill_server_during_run(
    work: Path,
    upstream_url: str,
    victim: str,
    *,
    serve: bool,
    tasks: int = 100,
    repeats: int = 4,
    concurrency: int = 8,
    after: int = 20,
) -> DeathReport:
    marker = new_marker()
    work.mkdir(parents=True, exist_ok=True)
    report = DeathReport(victim=victim, serve=serve, total=tasks * repeats)
    write_mcqa_rows(work / "in.jsonl", tasks)
    out = work / "out" / "rollouts.jsonl"
    stack = env_args(upstream_url, work / "logs")
    fresh = run_args(out, input_path=work / "in.jsonl", concurrency=concurrency, repeats=repeats)
    env: GymProcess | None = None
    try:
        if serve:
            run = GymProcess([*fresh, *stack], cwd=work, marker=marker)
        else:
            env, head = start_env(stack, cwd=work, marker=marker)
            run = GymProcess([*fresh, "--no-serve", "--head-url", head], cwd=work, marker=marker)
        assert poll(lambda: lines(out) >= after, 180), run.text
        pid = started_pid(work / "logs" / f"{victim}.log") if serve else instances(head)[victim]["pid"]
        os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic()
        report.collector_code = run.finish(timeout=120)
        report.stop_s = time.monotonic() - killed_at
        report.collector_text = run.text
        if env is not None:
            report.env_code = env.finish(timeout=60)
            report.env_text = env.text
        report.orphans = [describe([p]) for p in no_marked_processes(marker, timeout=15)]
        report.partial = check_partition(out.parent, complete=False)

        if serve:
            report.resumed = gym([*run_args(out, resume=True), *stack], cwd=work, marker=marker)
        else:
            env, head = start_env(stack, cwd=work, marker=marker)
            resume = [*run_args(out, resume=True), "--no-serve", "--head-url", head]
            report.resumed = gym(resume, cwd=work, marker=marker)
        if report.resumed.code == 0:
            report.final = check_partition(out.parent)
        return report
    finally:
        if env is not None and env.running:
            env.signal(signal.SIGTERM)
            env.finish(timeout=60)
        kill_marked(marker)


def resume_line(report: DeathReport) -> bool:
    """The resume started from exactly the rollouts stored before the kill."""
    assert report.partial is not None and report.resumed is not None
    expected = f"Resuming: {report.partial.succeeded} of {report.total} rollouts already done"
    return expected in report.resumed.output
