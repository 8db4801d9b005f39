"""Rollout rows carry NeMo Gym 0.7.0's ``_ng_environment_server``, ``_ng_result_type`` and ``ng_perf``
(docs/reference/contract.md §4.9): names, types and meaning as in 0.7.0's files."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from rewardgym.collect.failures import RetryPolicy
from rewardgym.collect.materialize import MaterializeOptions
from rewardgym.collect.rollout_fields import environment_server_names, perf_of, relay_name
from rewardgym.collect.runner import run_collection
from rewardgym.collect.settings import CollectSettings
from rewardgym.collect.watch import AgentDirectory
from rewardgym.launch.serve import ThreadedServer
from tests.collect.agent_stub import StubAgent
from tests.conftest import EXAMPLES, NG_OUTPUTS, REPO_ROOT

# The ng_perf of 0.7.0's own projection for one simple_agent turn (its health-check reference example).
NEMO_PERF_EXAMPLE = {
    "num_turns": 1,
    "num_tool_calls": 0,
    "token_observability_coverage": 1.0,
    "prompt_tokens": 94,
    "completion_tokens": 28,
    "total_latency_ms": 910.0,
}


def _nemo_rows() -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (NG_OUTPUTS / "smoke_5rollouts.jsonl").read_bytes().splitlines()]


def test_relay_name_is_the_one_nemo_gym_wrote() -> None:
    row = _nemo_rows()[0]
    assert row["agent_ref"] == {"name": "mcqa_simple_agent"}
    assert relay_name("mcqa_simple_agent", "simple_agent") == row["_ng_environment_server"]
    assert row["_ng_result_type"] == "legacy_agent"


@pytest.mark.parametrize(
    ("agent", "agent_type", "expected"),
    [
        ("mcqa_simple_agent", "simple_agent", "mcqa_environment_server"),
        ("simple_agent", "simple_agent", "simple_agent_environment_server"),
        ("math_agent", "custom", "math_environment_server"),
        ("solver", "custom", "solver_environment_server"),
        ("mcqa_simple_agent", None, "mcqa_simple_environment_server"),
    ],
)
def test_relay_name_rule(agent: str, agent_type: str | None, expected: str) -> None:
    assert relay_name(agent, agent_type) == expected


def test_name_clashes_fall_back_to_the_agent_name() -> None:
    names = environment_server_names(
        {"a_simple_agent": "simple_agent", "a_agent": None, "b_simple_agent": "simple_agent"},
        taken={"b_environment_server", "b_simple_agent_environment_server"},
    )
    # a_agent → "a_environment_server" first (sorted); a_simple_agent's "a_environment_server" is then
    # another agent's relay; b's is an instance name, and so is its first fallback.
    assert names == {
        "a_agent": "a_environment_server",
        "a_simple_agent": "a_simple_agent_environment_server",
        "b_simple_agent": "b_simple_agent_environment_server_environment_server",
    }


def test_unknown_types_are_guessed_from_the_known_ones() -> None:
    names = environment_server_names(
        {"mcqa_simple_agent": None, "x:Y": "pkg.mod:Cls"}, known_types=["simple_agent"]
    )
    assert names == {"mcqa_simple_agent": "mcqa_environment_server", "x:Y": "x:Y_environment_server"}


def test_perf_of_a_single_turn_has_nemo_gyms_keys_and_types() -> None:
    result = {
        "response": {
            "output": [{"type": "message", "role": "assistant", "content": []}],
            "usage": {"input_tokens": 94, "output_tokens": 28, "total_tokens": 122},
        }
    }
    perf = perf_of(result, 910.0)
    assert perf == NEMO_PERF_EXAMPLE
    assert list(perf) == list(NEMO_PERF_EXAMPLE)
    assert [type(v) for v in perf.values()] == [type(v) for v in NEMO_PERF_EXAMPLE.values()]


def test_perf_of_a_multi_turn_episode_with_tools() -> None:
    call = {"type": "function_call", "call_id": "c", "name": "t", "arguments": "{}"}
    done = {"type": "function_call_output", "call_id": "c", "output": "{}"}
    answer = {"type": "message", "role": "assistant", "content": []}
    result = {
        "response": {
            # turn 1: reasoning + 2 calls; turn 2: 1 call; turn 3: the answer
            "output": [{"type": "reasoning"}, call, call, done, done, call, done, answer],
            "usage": {
                "input_tokens": 300,
                "input_tokens_details": {"cached_tokens": 120},
                "output_tokens": 60,
                "output_tokens_details": {"reasoning_tokens": 25},
            },
        }
    }
    assert perf_of(result, 12.5) == {
        "num_turns": 3,
        "num_tool_calls": 3,
        "token_observability_coverage": 1.0,
        "prompt_tokens": 300,
        "cached_prompt_tokens": 120,
        "completion_tokens": 60,
        "reasoning_tokens": 25,
        "total_latency_ms": 12.5,
    }


def test_perf_without_usage_or_output() -> None:
    assert perf_of({"response": {"output": []}}, None) == {
        "num_turns": 1,
        "num_tool_calls": 0,
        "token_observability_coverage": 0.0,
    }
    unknown = {"response": {"output": [], "usage": {"input_tokens": None, "output_tokens": -1}}}
    assert perf_of(unknown, 1.0)["token_observability_coverage"] == 0.0


async def test_collected_rows_carry_the_fields(tmp_path: Path, agent: StubAgent) -> None:
    rows = [{"responses_create_params": {"input": f"q{i}"}, "stub": {"delay_s": 0.05}} for i in range(3)]
    (tmp_path / "in.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    settings = CollectSettings(
        output=tmp_path / "out" / "rollouts.jsonl",
        input=tmp_path / "in.jsonl",
        materialize=MaterializeOptions(agent_name="agent"),
        retry=RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.02),
        rollout_timeout_s=5.0,
        live_progress=False,
    )
    urls = AgentDirectory({"agent": agent.url}, agent_types={"agent": "simple_agent"})
    await run_collection(settings, urls, out=io.StringIO())
    written = [orjson.loads(line) for line in settings.output.read_bytes().splitlines()]
    assert len(written) == 3
    for row in written:
        assert list(row)[-6:] == [
            "_ng_task_index", "_ng_rollout_index", "agent_ref", "_ng_environment_server", "_ng_result_type",
            "ng_perf",
        ]  # fmt: skip
        assert row["_ng_environment_server"] == "agent_environment_server"
        assert row["_ng_result_type"] == "legacy_agent"
        perf = row["ng_perf"]
        # The stub answers no response: one turn, no tools, no tokens; its 50 ms delay is in the latency.
        assert perf["num_turns"] == 1 and perf["num_tool_calls"] == 0
        assert perf["token_observability_coverage"] == 0.0
        assert isinstance(perf["total_latency_ms"], float) and 50.0 <= perf["total_latency_ms"] < 5000.0


STACK = """\
policy_model:
  responses_api_models:
    openai_model:
      openai_base_url: ${policy_base_url}
      openai_api_key: ${policy_api_key}
      openai_model: ${policy_model_name}
"""


@pytest.mark.slow
def test_served_mcqa_rows_have_nemo_gyms_keys(tmp_path: Path, upstream: ThreadedServer) -> None:
    """A real stack (model server → stub, mcqa, simple_agent): the rows hold 0.7.0's keys in its order, plus
    ng_perf, whose token figures are the response's usage."""
    (tmp_path / "stack.yaml").write_text(STACK)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    run = subprocess.run(
        [sys.executable, "-m", "rewardgym", "eval", "run", "--config", "stack.yaml",
         "--resources-server", "mcqa", "--model-url", f"{upstream.url}/v1", "--model", "stub",
         "--model-api-key", "sk-fields-test",
         "--input", str(EXAMPLES / "mcqa" / "example.jsonl"), "--agent", "mcqa_simple_agent",
         "--output", "out/rollouts.jsonl", "--no-health-check"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    ours = [orjson.loads(line) for line in (tmp_path / "out" / "rollouts.jsonl").read_bytes().splitlines()]
    theirs = _nemo_rows()
    assert len(ours) == len(theirs) == 5
    # The collector's keys come last, in 0.7.0's order (what comes before is the environment's answer).
    stamps = list(theirs[0])[-5:]
    assert stamps == [
        "_ng_task_index",
        "_ng_rollout_index",
        "agent_ref",
        "_ng_environment_server",
        "_ng_result_type",
    ]
    for row in ours:
        assert list(row)[-6:] == [*stamps, "ng_perf"]
        assert row["_ng_environment_server"] == "mcqa_environment_server"
        assert row["_ng_result_type"] == "legacy_agent"
        usage = row["response"]["usage"]
        perf = row["ng_perf"]
        assert perf["prompt_tokens"] == usage["input_tokens"]
        assert perf["completion_tokens"] == usage["output_tokens"]
        assert perf["num_turns"] == 1 and perf["num_tool_calls"] == 0
        assert perf["total_latency_ms"] > 0
