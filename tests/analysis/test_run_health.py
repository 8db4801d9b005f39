"""``gym eval run`` prints the health verdict after collecting (a real process against a real stub agent),
and ``--no-health-check`` turns it off."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import orjson

from tests.collect.agent_stub import StubAgent
from tests.conftest import REPO_ROOT


async def _run(tmp_path: Path, agent: StubAgent, *extra: str) -> tuple[int, str]:
    rows = [
        {"responses_create_params": {"input": f"q{i}"}, "stub": {"reward": 5.0 if i == 1 else 1.0}}
        for i in range(3)
    ]
    (tmp_path / "in.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rewardgym", "eval", "run", "--no-serve", "--head-url", agent.url,
        "--input", "in.jsonl", "--agent", "agent", "--num-repeats", "2",
        "--output", "out/rollouts.jsonl", *extra,
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output = (await proc.stdout.read()).decode() if proc.stdout else ""
    return await proc.wait(), output


async def test_run_prints_the_health_verdict(tmp_path: Path, agent: StubAgent) -> None:
    code, output = await _run(tmp_path, agent)
    assert code == 0, output
    out = tmp_path / "out"
    assert "Rollout health: 6 checked, 0 healthy, 2 unhealthy, 4 unobserved" in output
    assert f"Quality summary: {Path('out/rollouts_quality_summary.json')}" in output
    assert "Health: unhealthy" in output
    assert "reward_out_of_range: 2 rewards (33.3 %) lie outside the declared range [0, 1]" in output
    assert "agent_turn_hollow" not in output  # the stub agent returns no response: nothing to judge
    summary = orjson.loads((out / "rollouts_quality_summary.json").read_bytes())
    assert summary["run"]["issues"]["reward_out_of_range"] == 2
    assert len((out / "rollouts_rollout_verdicts.jsonl").read_bytes().splitlines()) == 6


async def test_no_health_check_flag(tmp_path: Path, agent: StubAgent) -> None:
    code, output = await _run(tmp_path, agent, "--no-health-check")
    assert code == 0, output
    assert "Rollout health" not in output
    assert not (tmp_path / "out" / "rollouts_quality_summary.json").exists()
