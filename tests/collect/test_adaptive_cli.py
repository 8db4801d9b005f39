"""``gym eval run --adaptive`` from the command line: a real process killed with SIGKILL mid-round, then
``--resume``, continues the rounds to the exact key set of an uninterrupted run; bad flag combinations are
one-line usage errors (exit 2); a resume with other adaptive settings is refused naming them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from rewardgym.cli.main import main
from rewardgym.stats.adaptive import AdaptivePolicy
from tests.collect.test_adaptive_run import P_SPREAD, _check_exact, _input, _keys, _settled_or_capped
from tests.stubs.bernoulli_agent import BernoulliAgent, start_bernoulli_agent
from tests.stubs.processes import gym_environ, poll


@pytest.fixture(scope="module")
def slow_agent() -> Iterator[BernoulliAgent]:
    # 25 ms per rollout, 2 in flight: a round of ~100 rollouts lasts ~1 s, long enough to be killed inside.
    with start_bernoulli_agent("--delay-ms", "25") as running:
        yield running


def _args(agent: BernoulliAgent, output: str, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "rewardgym", "eval", "run", "--no-serve", "--head-url", agent.url,
        "-o", output, "--concurrency", "2", "--no-health-check", "--disable-aggregation", *extra,
    ]  # fmt: skip


def _gym(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=gym_environ(), capture_output=True, text=True, timeout=300, check=False
    )


def _rollout_indices(path: Path) -> set[int]:
    if not path.exists():
        return set()
    indices = set()
    for line in path.read_bytes().splitlines():
        try:
            indices.add(orjson.loads(line)["_ng_rollout_index"])
        except orjson.JSONDecodeError:
            continue  # a line being written
    return indices


@pytest.mark.slow
def test_kill_9_mid_round_then_resume_continues_the_rounds(
    tmp_path: Path, slow_agent: BernoulliAgent
) -> None:
    _input(tmp_path)
    run = _args(slow_agent, "out/rollouts.jsonl", "--input", "tasks.jsonl", "--adaptive")
    rollouts = tmp_path / "out" / "rollouts.jsonl"
    kills = 0
    for threshold in (4, 8):  # inside the first extra round, then inside the second
        proc = subprocess.Popen(
            run + (["--resume"] if kills else []),
            cwd=tmp_path,
            env=gym_environ(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        # A rollout of a later round is stored only after that round's rows were appended and synced.
        def later_round(t: int = threshold, p: subprocess.Popen[bytes] = proc) -> bool:
            return any(i >= t for i in _rollout_indices(rollouts)) or p.poll() is not None

        reached = poll(later_round, 120)
        if proc.poll() is None and reached:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait(timeout=30)
    assert kills >= 1
    resumed = _gym(_args(slow_agent, "out/rollouts.jsonl", "--resume"), tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Resuming:" in resumed.stdout and "Adaptive repeats: 30 tasks" in resumed.stdout
    materialized, stored = _check_exact(rollouts)
    _settled_or_capped(materialized, AdaptivePolicy())
    reference = _gym(
        _args(slow_agent, "ref/rollouts.jsonl", "--input", "tasks.jsonl", "--adaptive"), tmp_path
    )
    assert reference.returncode == 0, reference.stdout + reference.stderr
    ref_rows = [
        orjson.loads(line) for line in (tmp_path / "ref" / "rollouts.jsonl").read_bytes().splitlines()
    ]
    assert sorted(_keys(stored)) == sorted(_keys(ref_rows))
    assert max(i for _, i in _keys(stored)) >= 8  # the rounds went on after the resume
    assert len(P_SPREAD) * 4 < len(stored)


def _in_process(agent: BernoulliAgent, folder: Path, *extra: str) -> list[str]:
    output = str(folder / "out" / "rollouts.jsonl")
    return [
        "eval", "run", "--no-serve", "--head-url", agent.url, "-o", output, "--concurrency", "2",
        "--no-health-check", "--disable-aggregation", *extra,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--adaptive-max", "8"], "--adaptive-max needs --adaptive"),
        (["--adaptive-budget", "8"], "--adaptive-budget needs --adaptive"),
        (["--adaptive", "--num-repeats", "4"], "--adaptive chooses the repeats per task itself"),
        (["--adaptive", "++num_repeats=4"], "--adaptive chooses the repeats per task itself"),
        (
            ["--adaptive", "--adaptive-initial", "8", "--adaptive-max", "4"],
            "--adaptive-max (4) must be >= --adaptive-initial (8)",
        ),
        (["--adaptive", "--adaptive-initial", "1"], "--adaptive-initial must be >= 2"),
        (["--adaptive", "--adaptive-confidence", "1.5"], "--adaptive-confidence must be in (0.5, 1)"),
        (["--adaptive", "--adaptive-boundary", "0"], "--adaptive-boundary must be a pass rate in (0, 1)"),
        (
            ["--adaptive", "--adaptive-budget", "50"],
            "--adaptive-budget 50 is smaller than the first round: 60",
        ),
    ],
)
def test_bad_flag_combinations_are_usage_errors(
    tmp_path: Path,
    slow_agent: BernoulliAgent,
    extra: list[str],
    fragment: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(_in_process(slow_agent, tmp_path, "--input", str(_input(tmp_path)), *extra))
    printed = capsys.readouterr()
    assert code == 2, printed.out + printed.err
    assert printed.err.startswith("Error: ") and fragment in printed.err
    assert printed.err.count("\n") == 1  # one line, no traceback
    assert not (tmp_path / "out" / "rollouts_materialized_inputs.jsonl").exists()


def test_resume_with_other_adaptive_settings_is_refused(
    tmp_path: Path, slow_agent: BernoulliAgent, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = str(_input(tmp_path, [0.5, 0.5]))
    assert main(_in_process(slow_agent, tmp_path, "--input", tasks, "--adaptive")) == 0
    capsys.readouterr()
    assert main(_in_process(slow_agent, tmp_path, "--resume", "--adaptive", "--adaptive-max", "8")) == 2
    assert "settings.adaptive.max_per_task: 16 → 8" in capsys.readouterr().err
    assert main(_in_process(slow_agent, tmp_path, "--resume", "--adaptive", "--adaptive-max", "16")) == 0
    assert main(_in_process(slow_agent, tmp_path, "--resume")) == 0
    assert "Resuming:" in capsys.readouterr().out
