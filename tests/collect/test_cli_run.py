"""`gym eval run` as a real process: kill -9 at random moments + --resume gives the exact key set."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
from pathlib import Path

import orjson
import pytest

from tests.collect.agent_stub import StubAgent
from tests.conftest import REPO_ROOT


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"}


async def _gym(*args: str, cwd: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rewardgym", "eval", "run", *args,
        cwd=cwd, env=_env(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip


@pytest.mark.slow
async def test_kill_9_at_random_moments_then_resume_gives_exact_key_set(
    tmp_path: Path, agent: StubAgent
) -> None:
    rows = [{"responses_create_params": {"input": f"q{i}"}, "stub": {"delay_s": 0.1}} for i in range(30)]
    (tmp_path / "in.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    out = tmp_path / "out" / "rollouts.jsonl"
    fingerprint = tmp_path / "out" / "rollouts_run.json"
    common = ["--no-serve", "--head-url", agent.url, "--output", str(out), "--concurrency", "4"]
    fresh = ["--input", "in.jsonl", "--agent", "agent", "--num-repeats", "3", *common]
    rng = random.Random(1234)
    kills = 0
    finished = False
    for _ in range(12):
        args = [*common, "--resume"] if fingerprint.exists() else fresh
        proc = await _gym(*args, cwd=tmp_path)
        if kills < 5:
            try:
                await asyncio.wait_for(proc.wait(), timeout=rng.uniform(0.3, 2.0))
            except TimeoutError:
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
        code = await proc.wait()
        output = (await proc.stdout.read()).decode() if proc.stdout else ""
        if code == 0:
            finished = True
            break
        assert code == -signal.SIGKILL, output
    assert finished
    assert kills >= 1
    lines = out.read_bytes().splitlines()
    keys = [(r["_ng_task_index"], r["_ng_rollout_index"]) for r in map(orjson.loads, lines)]
    assert len(keys) == len(set(keys)), "duplicate rollouts after resume"
    assert set(keys) == {(t, r) for t in range(30) for r in range(3)}


async def test_cli_errors_are_one_line_without_traceback(tmp_path: Path, agent: StubAgent) -> None:
    (tmp_path / "in.jsonl").write_text('{"responses_create_params": {"input": "q"}}\n{bad\n')
    head = ["--no-serve", "--head-url", agent.url]
    cases = [
        ([*head, "--input", "in.jsonl", "--agent", "agent"], "in.jsonl:2: malformed JSON"),
        ([*head, "--input", "missing.jsonl", "--agent", "agent"], "Input file not found"),
        ([*head, "--input", "in.jsonl", "--num-repeats", "0"], "num_repeats must be an integer >= 1"),
        ([*head, "--resume", "-o", "none/r.jsonl"], "cannot resume: no previous run found"),
        (["--no-serve", "--head-url", "http://127.0.0.1:9", "--input", "in.jsonl"], "no head server answers"),
        (["--no-serve", "--inptu", "in.jsonl"], "did you mean '--input'"),
    ]
    for args, fragment in cases:
        proc = await _gym(*args, cwd=tmp_path)
        code = await proc.wait()
        output = (await proc.stdout.read()).decode() if proc.stdout else ""
        assert code != 0, (args, output)
        assert fragment in output, (args, output)
        assert "Traceback" not in output
