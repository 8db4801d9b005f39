"""`gym eval run` exit codes, Ctrl-C, `--shard` + `gym eval aggregate`, and checks made before servers start —
each through a real `gym` process against the real HTTP stub agent."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from rewardgym.collect.stack import ServedStack
from rewardgym.config import load_config_from_flags
from tests.collect.agent_stub import StubAgent
from tests.conftest import REPO_ROOT


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"}


async def _gym(*args: str, cwd: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rewardgym", *args,
        cwd=cwd, env=_env(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await proc.communicate()
    return await proc.wait(), out.decode()


def _rows(path: Path, specs: list[dict[str, Any]]) -> None:
    rows = [{"responses_create_params": {"input": f"q{i}"}, "stub": s} for i, s in enumerate(specs)]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))


def _run_args(agent: StubAgent, out: Path, *extra: str) -> list[str]:
    return ["eval", "run", "--no-serve", "--head-url", agent.url, "--input", "in.jsonl", "--agent", "agent",
            "--output", str(out), *extra]  # fmt: skip


async def test_every_rollout_failing_exits_3(tmp_path: Path, agent: StubAgent) -> None:
    _rows(tmp_path / "in.jsonl", [{"fail": [400]}] * 4)
    code, output = await _gym(*_run_args(agent, tmp_path / "out" / "r.jsonl"), cwd=tmp_path)
    assert code == 3, output
    assert "Error: 4 of 4 rollouts failed this run (100.0%)" in output
    assert "Aggregate metrics: not computed (no rollout succeeded)" in output
    assert "Aggregate metrics: None" not in output


async def test_max_failure_rate_gate(tmp_path: Path, agent: StubAgent) -> None:
    # 25 % fail (the stub counts attempts per key over the runs: one 400 per run)
    _rows(tmp_path / "in.jsonl", [{"fail": [400] * 5}, {}, {}, {}])
    out = tmp_path / "out" / "r.jsonl"
    code, output = await _gym(*_run_args(agent, out, "++max_failure_rate=0.3"), cwd=tmp_path)
    assert code == 0, output
    code, output = await _gym(*_run_args(agent, out, "++max_failure_rate=0.2"), cwd=tmp_path)
    assert code == 3, output
    assert "1 of 4 rollouts failed this run (25.0% > max_failure_rate 0.2)" in output
    code, output = await _gym(*_run_args(agent, out, "++max_failure_rate=2"), cwd=tmp_path)
    assert code == 2 and "max_failure_rate must be a number in 0..1" in output


async def test_ctrl_c_says_interrupted_with_counts_and_exits_130(tmp_path: Path, agent: StubAgent) -> None:
    _rows(tmp_path / "in.jsonl", [{"delay_s": 0.2}] * 40)
    out = tmp_path / "out" / "r.jsonl"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rewardgym", *_run_args(agent, out, "--concurrency", "2"),
        cwd=tmp_path, env=_env(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    while not (out.exists() and out.read_bytes().count(b"\n") >= 2):  # wait for stored rollouts
        assert proc.returncode is None
        await asyncio.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    raw, _ = await proc.communicate()
    output = raw.decode()
    assert proc.returncode == 130, output
    stored = out.read_bytes().count(b"\n")
    match = re.search(r"Interrupted: (\d+) of 40 rollouts stored \((\d+) this run\)", output)
    assert match is not None, output
    assert int(match[1]) == int(match[2]) == stored < 40
    assert "--resume" in output and "Finished rollout collection" not in output
    assert "Aggregate metrics: not computed (the run did not finish)" in output


@pytest.mark.slow
async def test_shards_are_disjoint_and_aggregate_merges_them(tmp_path: Path, agent: StubAgent) -> None:
    _rows(tmp_path / "in.jsonl", [{}] * 5)
    for i in range(3):
        code, output = await _gym(
            *_run_args(agent, tmp_path / f"s{i}" / "r.jsonl", "--num-repeats", "2", "--shard", f"{i}/3"),
            cwd=tmp_path,
        )
        assert code == 0, output
    keys = [
        [
            (r["_ng_task_index"], r["_ng_rollout_index"])
            for r in map(orjson.loads, p.read_bytes().splitlines())
        ]
        for p in sorted(tmp_path.glob("s*/r.jsonl"))
    ]
    assert [sorted({t for t, _ in shard}) for shard in keys] == [[0, 3], [1, 4], [2]]  # repeats stay together
    merged = tmp_path / "merged.jsonl"
    code, output = await _gym(
        "eval", "aggregate", "--input", "s*/r.jsonl", "-o", str(merged), "--head-url", agent.url, cwd=tmp_path
    )
    assert code == 0, output
    found = [
        (r["_ng_task_index"], r["_ng_rollout_index"])
        for r in map(orjson.loads, merged.read_bytes().splitlines())
    ]
    assert found == [(t, r) for t in range(5) for r in range(2)]

    code, output = await _gym(
        "eval", "aggregate", "--input", "s0/r.jsonl,s*/r.jsonl,s0/r.jsonl", "-o", "m2.jsonl",
        "--head-url", agent.url, cwd=tmp_path,
    )  # fmt: skip
    assert code == 0  # the same file named twice is one shard

    (tmp_path / "dup").mkdir()
    (tmp_path / "dup" / "r.jsonl").write_bytes((tmp_path / "s1" / "r.jsonl").read_bytes())
    code, output = await _gym(
        "eval", "aggregate", "--input", "s*/r.jsonl,dup/r.jsonl", "-o", "m3.jsonl", "--head-url", agent.url,
        cwd=tmp_path,
    )  # fmt: skip
    assert code == 1, output
    [line] = output.strip().splitlines()
    assert re.fullmatch(
        r"Error: rollout \(task [14], rollout [01]\) is in two shards: dup/r\.jsonl:1 and s1/r\.jsonl:1; "
        r"shards must be disjoint \(make them with 'gym eval run --shard I/N'\)",
        line,
    ), line
    assert not (tmp_path / "m3.jsonl").exists()

    code, output = await _gym(*_run_args(agent, tmp_path / "x.jsonl", "--shard", "3/3"), cwd=tmp_path)
    assert code == 2 and "--shard must be I/N with 0 <= I < N" in output


def test_serving_run_checks_input_before_starting_servers(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "rewardgym", "eval", "run", "--resources-server", "mcqa",
         "--input", "absent.jsonl"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr == "Error: Input file not found: 'absent.jsonl' (--input)\n"
    assert "Starting" not in result.stdout


def test_serving_head_port_is_inside_the_port_range(tmp_path: Path) -> None:
    cfg = load_config_from_flags(
        resources_servers=["mcqa"], model_types=["embedded_model"], cwd=tmp_path, env_yaml=False,
        overrides=["++port_range_low=23100", "++port_range_high=23199"],
    )  # fmt: skip
    assert all(23100 <= inst.port <= 23199 for inst in cfg.instances.values())
    stack = ServedStack(cfg, log_dir=tmp_path, startup_timeout_s=5, notify=lambda _: None)
    head = stack._supervisor.options.head_port
    assert 23100 <= head <= 23199 and head not in {i.port for i in cfg.instances.values()}
    model = cfg.instance("policy_model").fields
    assert model["llama_port_range"] == [23100, 23199]  # the embedded llama.cpp child too
