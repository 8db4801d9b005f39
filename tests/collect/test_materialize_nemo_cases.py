"""The four materialization cases that used to differ from NeMo Gym 0.7.0 now match it byte for byte.

The expected files were written by NeMo Gym 0.7.0 itself from the same inputs (see
tests/data/nemo_gym/NOTICE): ``--num-repeats-add-seed`` (seed JSON spacing, ASCII escapes, merged with an
``extra_body`` already there), ``--prompt-config`` (``input`` after the row's own parameters), ``--agent``
on rows that name other agents (every row rewritten, with a warning), ``--interleave-repeats`` ("abcabc").
Both the library and ``gym eval run`` (flag and ``++key`` spellings) are checked.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from aiohttp import web

from rewardgym.collect.materialize import MaterializeOptions, PromptConfig, iter_materialized
from tests.collect.agent_stub import StubAgent
from tests.conftest import NEMO_GYM_DATA, REPO_ROOT

CASES = NEMO_GYM_DATA / "nemo_gym_0.7.0_materialize"
PROMPT = PromptConfig(user="{question}\nOptions: {options}", system="Answer with one letter.")


def _bytes(path: Path, options: MaterializeOptions, warnings: list[str] | None = None) -> bytes:
    rows = iter_materialized(path, options, None if warnings is None else warnings.append)
    return b"".join(orjson.dumps(row) + b"\n" for row in rows)


def test_seed_json_matches_nemo_gym() -> None:
    ours = _bytes(CASES / "input.jsonl", MaterializeOptions(limit=6, num_repeats=2, add_seed=True))
    expected = (CASES / "seed_materialized_inputs.jsonl").read_bytes()
    assert ours == expected
    # The spacing and escapes the case is about, visible in the file itself.
    assert b'\\"seed\\": 0}' in expected
    assert b'\\"note\\": \\"caf\\\\u00e9\\", \\"t\\": 0.5, \\"seed\\": 1}' in expected


def test_prompt_config_key_order_matches_nemo_gym() -> None:
    options = MaterializeOptions(prompt_config=PROMPT, create_params_overrides={"temperature": 0.7})
    ours = _bytes(CASES / "prompt_input.jsonl", options)
    assert ours == (CASES / "prompt_materialized_inputs.jsonl").read_bytes()
    first = orjson.loads(ours.splitlines()[0])
    assert list(first["responses_create_params"]) == ["temperature", "tools", "metadata", "input"]


def test_agent_rewrites_every_row_like_nemo_gym_and_warns() -> None:
    warnings: list[str] = []
    ours = _bytes(CASES / "input.jsonl", MaterializeOptions(agent_name="new_agent"), warnings)
    assert ours == (CASES / "agent_materialized_inputs.jsonl").read_bytes()
    assert warnings == [
        "--agent new_agent replaced the agent_ref the rows named (mcqa_simple_agent → new_agent (5 rows), "
        "other_agent → new_agent (1 row)), as NeMo Gym 0.7.0 does; pass --agent-fill-missing to set it "
        "only on rows without one"
    ]


def test_agent_fill_missing_keeps_the_rows_own_agents() -> None:
    warnings: list[str] = []
    options = MaterializeOptions(agent_name="new_agent", agent_fill_missing=True)
    rows = list(iter_materialized(CASES / "input.jsonl", options, warnings.append))
    assert [r["agent_ref"] for r in rows] == [
        {"name": "mcqa_simple_agent"},
        {"name": "mcqa_simple_agent"},
        {"name": "mcqa_simple_agent"},
        {"type": "responses_api_agents", "name": "other_agent"},
        {"name": "mcqa_simple_agent"},
        {"name": "mcqa_simple_agent"},
        {"name": "new_agent"},
    ]
    assert warnings == []


def test_interleave_matches_nemo_gym() -> None:
    ours = _bytes(CASES / "input.jsonl", MaterializeOptions(limit=6, num_repeats=3, interleave=True))
    assert ours == (CASES / "interleave_materialized_inputs.jsonl").read_bytes()
    order = [(r["_ng_task_index"], r["_ng_rollout_index"]) for r in map(orjson.loads, ours.splitlines())]
    # Round by round; the duplicated first line continues task 0's numbering (rollouts 3..5).
    assert order[:6] == [(0, 0), (1, 0), (2, 0), (3, 0), (7, 0), (0, 1)]
    assert order[-3:] == [(0, 3), (0, 4), (0, 5)]


def test_interleave_keeps_the_same_rows() -> None:
    plain = _bytes(CASES / "input.jsonl", MaterializeOptions(limit=6, num_repeats=3))
    mixed = _bytes(CASES / "input.jsonl", MaterializeOptions(limit=6, num_repeats=3, interleave=True))
    assert plain != mixed
    assert sorted(plain.splitlines()) == sorted(mixed.splitlines())


class _ManyAgents(StubAgent):
    """The stub agent, listed by its head registry under every agent name the cases use."""

    async def instances(self, request: web.Request) -> web.Response:
        names = ("mcqa_simple_agent", "other_agent", "new_agent")
        records = [
            {"name": n, "kind": "responses_api_agents", "implementation": "stub", "url": self.url}
            for n in names
        ]
        return web.Response(body=orjson.dumps(records), content_type="application/json")


@pytest.fixture
async def many_agents() -> AsyncIterator[_ManyAgents]:
    stub = _ManyAgents()
    await stub.start()
    yield stub
    await stub.stop()


@pytest.mark.parametrize(
    ("case", "args"),
    [
        ("seed", ["--limit", "6", "--num-repeats", "2", "--num-repeats-add-seed"]),
        ("seed", ["++limit=6", "++num_repeats=2", "++num_repeats_add_seed=true"]),
        ("interleave", ["--limit", "6", "--num-repeats", "3", "--interleave-repeats"]),
        ("interleave", ["--limit", "6", "--num-repeats", "3", "++interleave_repeats=true"]),
        ("agent", ["--agent", "new_agent"]),
        ("agent", ["++agent_name=new_agent"]),
        ("prompt", ["--prompt-config", "PROMPT", "--temperature", "0.7"]),
    ],
)
async def test_gym_eval_run_writes_nemo_gyms_materialized_file(
    case: str, args: list[str], tmp_path: Path, many_agents: _ManyAgents
) -> None:
    source = CASES / ("prompt_input.jsonl" if case == "prompt" else "input.jsonl")
    out = tmp_path / "out" / "rollouts.jsonl"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rewardgym", "eval", "run", "--no-serve", "--head-url", many_agents.url,
        "--input", str(source), "--output", str(out), "--no-health-check", "--disable-aggregation",
        *[str(CASES / "prompt.yaml") if a == "PROMPT" else a for a in args],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output = (await proc.communicate())[0].decode()
    assert proc.returncode == 0, output
    materialized = tmp_path / "out" / "rollouts_materialized_inputs.jsonl"
    assert materialized.read_bytes() == (CASES / f"{case}_materialized_inputs.jsonl").read_bytes()
    if case == "agent":
        assert "Warning: --agent new_agent replaced the agent_ref the rows named" in output
    else:
        assert "replaced the agent_ref" not in output
