"""Kill ``gym eval run`` with SIGKILL at random moments — some of them in the middle of writing a line — and
resume after each kill, until the run completes; then check the rollouts file (shared by the crash tests
and ``benchmarks/reliability``).

A *mid-write* kill watches the rollouts file and sends SIGKILL the moment its last byte is not a newline:
the collector is inside the ``write`` of a (large, see :mod:`tests.stubs.bulky_agent`) line, and the kernel
stops a write to a regular file between pages when a fatal signal arrives, so the line is left torn. A
*timed* kill lands at a uniformly random time after the start (during imports, materialization, dispatch or
a write). The report says how many kills left a torn last line and whether each following resume noticed it.

A torn line an earlier kill left is not a new one: until the resume has cut it off (the file's size
changes), the watcher does not fire on it — else every later "mid-write" kill landed on that stale tail
during the next run's start-up and tore nothing (44 such kills, one torn line, on a loaded machine).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from tests.stubs.bulky_agent import expected_reward
from tests.stubs.processes import gym_environ, row_key

TORN_NOTE = "was cut short by a crash"


@dataclass
class KillReport:
    """What :func:`kill_and_resume` did and found."""

    kills: int = 0
    mid_write_kills: int = 0
    timed_kills: int = 0
    torn_lines: int = 0
    """Kills that left the rollouts file ending inside a (new) line."""
    torn_noticed: int = 0
    """Resumes that reported a torn line (and cut it off)."""
    runs: int = 0
    wall_s: float = 0.0
    rollouts: int = 0
    expected: int = 0
    outputs: list[str] = field(default_factory=list)


def _torn_tail(path: Path) -> tuple[int, int] | None:
    """(inode, size) of the file when it ends inside a line, else ``None``."""
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if info.st_size and os.pread(handle.fileno(), 1, info.st_size - 1) != b"\n":
                return info.st_ino, info.st_size
    except FileNotFoundError:
        pass
    return None


def kill_mid_write(
    proc: subprocess.Popen[bytes], path: Path, timeout: float, stale: tuple[int, int] | None = None
) -> bool:
    """SIGKILL ``proc`` as soon as ``path`` ends inside a line — other than the ``stale`` (inode, size)
    torn tail an earlier kill left; whether it was killed (False: it ended)."""
    deadline = time.monotonic() + timeout
    fd: int | None = None
    inode = -1
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                info = os.stat(path)
            except FileNotFoundError:
                time.sleep(0.001)
                continue
            if info.st_ino != inode:  # a fresh run replaces the file
                if fd is not None:
                    os.close(fd)
                fd, inode = os.open(path, os.O_RDONLY), info.st_ino
            assert fd is not None
            fresh = stale != (info.st_ino, info.st_size)
            if fresh and info.st_size and os.pread(fd, 1, info.st_size - 1) != b"\n":
                os.kill(proc.pid, signal.SIGKILL)
                return True
            time.sleep(0.00005)
    finally:
        if fd is not None:
            os.close(fd)
    if proc.poll() is None:  # never caught mid-line in time: kill it anyway
        os.kill(proc.pid, signal.SIGKILL)
        return True
    return False


def kill_and_resume(
    work: Path,
    agent_url: str,
    *,
    kills: int,
    tasks: int,
    repeats: int,
    seed: int = 0,
    concurrency: int = 4,
    timed_window_s: tuple[float, float] = (0.3, 2.5),
    min_torn: int = 0,
    max_runs: int | None = None,
) -> KillReport:
    """Kill (alternating mid-write and timed kills) and resume until the run completes; check the result.

    After ``kills`` kills, further mid-write kills are made until ``min_torn`` torn lines were seen (a kill
    that lands a moment after the write finished leaves a whole line), within ``max_runs`` runs.
    """
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    rows = [{"responses_create_params": {"input": f"question {i}"}} for i in range(tasks)]
    (work / "in.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    out = work / "out" / "rollouts.jsonl"
    fingerprint = work / "out" / "rollouts_run.json"
    common = ["--no-serve", "--head-url", agent_url, "--output", str(out), "--concurrency", str(concurrency)]
    fresh = ["--input", "in.jsonl", "--agent", "agent", "--num-repeats", str(repeats), *common]
    report = KillReport(expected=tasks * repeats)
    started = time.monotonic()
    # On a loaded machine a mid-write kill often lands just after the write finished (a whole line), so
    # tearing ``min_torn`` lines may take many runs; the last run is never killed (see ``final``).
    budget = max_runs or kills * 3 + 25
    for run in range(budget):
        final = run == budget - 1
        args = [*common, "--resume"] if fingerprint.exists() else fresh
        log = work / f"run-{run}.log"
        torn_before = _torn_tail(out)
        with open(log, "wb") as sink:
            proc = subprocess.Popen(
                [sys.executable, "-m", "rewardgym", "eval", "run", *args],
                cwd=work, env=gym_environ(), stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
            killed = False
            if not final and (report.kills < kills or report.torn_lines < min_torn):
                if report.kills % 2 == 0 or report.kills >= kills:
                    killed = kill_mid_write(proc, out, timeout=60, stale=torn_before)
                    report.mid_write_kills += int(killed)
                else:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=rng.uniform(*timed_window_s))
                    if proc.poll() is None:
                        proc.kill()
                        killed = True
                        report.timed_kills += 1
            code = proc.wait(timeout=600)
        report.runs += 1
        text = log.read_text(errors="replace")
        report.outputs.append(text)
        report.torn_noticed += int(TORN_NOTE in text)
        if killed:
            assert code == -signal.SIGKILL, text[-2000:]
            report.kills += 1
            torn_after = _torn_tail(out)
            report.torn_lines += int(torn_after is not None and torn_after != torn_before)
            continue
        assert code == 0, text[-3000:]
        break
    report.wall_s = time.monotonic() - started
    report.rollouts = check_final(out, tasks, repeats)
    return report


def check_final(out: Path, tasks: int, repeats: int) -> int:
    """Every line valid JSON, each key exactly once, every reward the agent's; the number of rollouts."""
    data = out.read_bytes()
    assert data.endswith(b"\n"), "the rollouts file does not end with a whole line"
    keys = []
    for number, line in enumerate(data.splitlines(), start=1):
        row = orjson.loads(line)  # raises on any invalid line
        key = row_key(row)
        assert row["reward"] == expected_reward(*key), f"line {number}: reward {row['reward']} for {key}"
        keys.append(key)
    assert len(keys) == len(set(keys)), f"{len(keys) - len(set(keys))} duplicate rollouts"
    assert set(keys) == {(t, r) for t in range(tasks) for r in range(repeats)}, (
        "not exactly the materialized keys"
    )
    return len(keys)
