"""NeMo Gym's `gym eval run` keys act on a real run: ++agent_map, the health-check keys, and the config keys
for what the flags say (+input_jsonl_fpath, +output_jsonl_fpath, +num_samples_in_parallel)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import orjson

from tests.collect.agent_stub import StubAgent
from tests.conftest import REPO_ROOT


async def _gym(*args: str, cwd: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rewardgym", "eval", "run", "--no-serve", *args,
        cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await proc.communicate()
    return proc.returncode or 0, output.decode()


def _rows(tmp_path: Path, agent: str) -> None:
    rows = [{"responses_create_params": {"input": f"q{i}"}, "agent_ref": {"name": agent}} for i in range(3)]
    (tmp_path / "in.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))


async def test_agent_map_sends_rows_to_the_served_agent(tmp_path: Path, agent: StubAgent) -> None:
    _rows(tmp_path, "mcqa_simple_agent")  # the stack serves only "agent"
    args = ["--head-url", agent.url, "--input", "in.jsonl"]
    code, output = await _gym(*args, "-o", "plain/rollouts.jsonl", cwd=tmp_path)
    assert code != 0 and "mcqa_simple_agent" in output
    code, output = await _gym(
        *args, "-o", "mapped/rollouts.jsonl", "++agent_map={mcqa_simple_agent: agent}", cwd=tmp_path
    )
    assert code == 0, output
    lines = (tmp_path / "mapped" / "rollouts.jsonl").read_bytes().splitlines()
    assert [orjson.loads(line)["agent_ref"]["name"] for line in lines] == ["agent"] * 3
    materialized = (tmp_path / "mapped" / "rollouts_materialized_inputs.jsonl").read_bytes().splitlines()
    assert {orjson.loads(line)["agent_ref"]["name"] for line in materialized} == {"agent"}


async def test_health_check_keys_reach_the_closing_health_check(tmp_path: Path, agent: StubAgent) -> None:
    _rows(tmp_path, "agent")
    args = ["--head-url", agent.url, "--input", "in.jsonl"]
    code, output = await _gym(
        *args, "-o", "a/rollouts.jsonl", "++health_check_workers=1",
        "++health_check_ignored_checks=[reward_out_of_range,model_call_failed]", cwd=tmp_path,
    )  # fmt: skip
    assert code == 0, output
    assert "(ignored: model_call_failed, reward_out_of_range)" in output
    summary = orjson.loads((tmp_path / "a" / "rollouts_quality_summary.json").read_bytes())
    assert summary["run"]["ignored_checks"] == ["model_call_failed", "reward_out_of_range"]
    assert summary["run"]["artifacts"]["coverage"]["reward_out_of_range"] == {
        "evaluated": 0, "unobserved": 0, "ignored": 3,
    }  # fmt: skip
    code, output = await _gym(
        *args, "-o", "b/rollouts.jsonl", "--health-check-ignore", "agent_turn_hollow", cwd=tmp_path
    )
    assert code == 0 and "(ignored: agent_turn_hollow)" in output, output
    for bad, fragment in (
        ("++health_check_workers=0", "health_check_workers: workers must be at least 1"),
        ("++health_check_ignored_checks=no_such_check", "Unknown rollout health check(s): no_such_check"),
    ):
        code, output = await _gym(*args, "-o", "c/rollouts.jsonl", bad, cwd=tmp_path)
        assert code == 2 and fragment in output, output
        assert not (tmp_path / "c").exists()  # refused before anything is written


async def test_nemo_path_keys_stand_for_the_flags(tmp_path: Path, agent: StubAgent) -> None:
    _rows(tmp_path, "agent")
    code, output = await _gym(
        "--head-url", agent.url, "+input_jsonl_fpath=in.jsonl", "+output_jsonl_fpath=out/r.jsonl",
        "+num_samples_in_parallel=2", "+num_repeats=2", cwd=tmp_path,
    )  # fmt: skip
    assert code == 0, output
    assert len((tmp_path / "out" / "r.jsonl").read_bytes().splitlines()) == 6
