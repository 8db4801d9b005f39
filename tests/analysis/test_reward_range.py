"""The reward range comes from the environment: ``reward_range`` of the resources server's config (its
class default, or the YAML's), recorded by ``gym eval run`` in ``<stem>_run.json``, used by the health
check after the run and by ``gym eval health-check`` / ``analyze`` offline; ``--reward-range`` overrides."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

from rewardgym.analysis import analyze_files
from rewardgym.cli.reward_range import declared_reward_range
from rewardgym.config import load_config
from rewardgym.env import ResourcesServer, ResourcesServerConfig, VerifyRequest, VerifyResponse
from rewardgym.servers.resources import ResourcesServerConfig as Base
from tests.analysis.helpers import rollout, write
from tests.collect.agent_stub import StubAgent
from tests.conftest import REPO_ROOT
from tests.profile.helpers import cli


class WideConfig(ResourcesServerConfig):
    reward_range: tuple[float, float] = (-1.0, 10.0)


class WideEnv(ResourcesServer[WideConfig]):
    """An environment whose rewards run from -1 to 10 (declared by its config class)."""

    async def verify(self, body: VerifyRequest) -> VerifyResponse:
        return VerifyResponse.of(body, reward=10.0)


def test_the_config_field_defaults_to_0_1_and_is_validated() -> None:
    assert Base(name="r").reward_range == (0.0, 1.0)
    assert Base(name="r", reward_range=[0, 5]).reward_range == (0.0, 5.0)
    for bad in ([2, 1], [0, float("inf")], [0]):
        with pytest.raises(ValidationError, match="reward_range"):
            Base(name="r", reward_range=bad)


_MATCH = "m:\n  resources_servers:\n    string_match:\n      entrypoint: app.py\n"
_WIDE = "w:\n  resources_servers:\n    tests.analysis.test_reward_range:WideEnv:\n      entrypoint: app.py\n"


def _config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "stack.yaml"
    path.write_text(body)
    return path


def test_declared_range_from_class_default_yaml_and_union(tmp_path: Path) -> None:
    plain = load_config(
        [_config(tmp_path, _MATCH)],
        cwd=tmp_path,
    )
    assert declared_reward_range(plain) is None  # [0, 1]: nothing recorded
    yaml = load_config(
        [
            _config(
                tmp_path,
                _MATCH + "      reward_range: [0, 5]\n",
            )
        ],
        cwd=tmp_path,
    )
    assert declared_reward_range(yaml) == [0.0, 5.0]
    both = load_config(
        [
            _config(
                tmp_path,
                _MATCH + _WIDE,
            )
        ],
        cwd=tmp_path,
    )
    assert declared_reward_range(both) == [-1.0, 10.0]


def _run_file(folder: Path, reward_range: list[float] | None) -> None:
    settings: dict[str, object] = {"config": {}, "materialize": {}}
    if reward_range is not None:
        settings["reward_range"] = reward_range
    (folder / "rollouts_run.json").write_bytes(orjson.dumps({"version": 1, "settings": settings}))


def test_offline_analysis_uses_the_recorded_range_and_the_flag_overrides(tmp_path: Path) -> None:
    rows = [rollout(0, 0, reward=7.0), rollout(0, 1, reward=11.0), rollout(1, 0, reward=0.0), rollout(1, 1)]
    rollouts = write(tmp_path / "rollouts.jsonl", rows)
    _run_file(tmp_path, [0.0, 10.0])
    result = analyze_files(None, rollouts, strict=False, health_only=True)
    assert result.analysis.health.rollout_flags["reward_out_of_range"].tolist() == [False, True, False, False]
    assert result.analysis.document["settings"]["reward_range"] == [0.0, 10.0]
    finding = {f.check: f for f in result.analysis.health.findings}["reward_out_of_range"]
    assert "[0, 10]" in finding.evidence and "reward_range" in finding.fix
    run = cli("eval", "health-check", str(tmp_path), "--reward-range", "0,1", "--json")
    assert run.returncode == 4, run.stderr  # half the rewards out of range: unhealthy
    assert orjson.loads(run.stdout)["run"]["issues"]["reward_out_of_range"] == 2
    _run_file(tmp_path, None)  # a run file without a declared range: [0, 1]
    result = analyze_files(None, rollouts, strict=False, health_only=True)
    assert result.analysis.document["settings"]["reward_range"] == [0.0, 1.0]
    assert int(result.analysis.health.rollout_flags["reward_out_of_range"].sum()) == 2


async def test_run_records_the_declared_range_and_its_health_check_uses_it(
    tmp_path: Path, agent: StubAgent
) -> None:
    rows = [
        {"responses_create_params": {"input": f"q{i}"}, "stub": {"reward": 5.0 if i == 1 else 1.0}}
        for i in range(3)
    ]
    (tmp_path / "in.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    _config(
        tmp_path,
        _MATCH + "      reward_range: [0, 5]\n",
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rewardgym", "eval", "run", "--no-serve", "--head-url", agent.url,
        "--config", "stack.yaml", "--input", "in.jsonl", "--agent", "agent", "--num-repeats", "2",
        "--output", "out/rollouts.jsonl",
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output = (await proc.stdout.read()).decode() if proc.stdout else ""
    assert await proc.wait() == 0, output
    fingerprint = orjson.loads((tmp_path / "out" / "rollouts_run.json").read_bytes())
    assert fingerprint["settings"]["reward_range"] == [0.0, 5.0]
    assert "Rollout health: 6 checked, 0 healthy, 0 unhealthy, 6 unobserved" in output
    assert "reward_out_of_range" not in output
