"""instruction_following over real HTTP: recorded-rollout compatibility, bad input, reverify mode, config."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rewardgym.environments.instruction_following.app import InstructionFollowingServer
from rewardgym.environments.instruction_following.tests.test_instruction_following import (
    ROLLOUTS,
    ROWS_BY_PROMPT,
    _lines,
    _prompt,
)
from rewardgym.launch.serve import ThreadedServer
from rewardgym.testing import COLLECTOR_COLUMNS, assert_echoed, post

STAMPS = COLLECTOR_COLUMNS
LEGACY_COLUMNS = {"instruction_id_list", "kwargs", "prompt"}
"""Top-level columns of the older recording; current NeMo Gym and we return ``verifier_metadata`` (README)."""
POLICY = ["++policy_base_url=http://127.0.0.1:9/v1", "++policy_api_key=dummy", "++policy_model_name=m"]


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    config = {"name": "instruction_following", "log_level": "WARNING"}
    with ThreadedServer(InstructionFollowingServer(config)) as running:
        yield running


async def test_http_compatibility_with_recorded_rollouts(server: ThreadedServer) -> None:
    table = [
        "instruction_following over HTTP: row (id) | ours reward / followed | NeMo Gym reward / followed"
    ]
    position = {row["id"]: index for index, row in enumerate(_lines("example.jsonl"))}
    pairs = sorted(
        ((ROWS_BY_PROMPT[_prompt(r)], r) for r in ROLLOUTS), key=lambda pair: position[pair[0]["id"]]
    )
    assert [position[row["id"]] for row, _ in pairs] == [0, 1, 2, 3, 4]
    for row, rollout in pairs:
        reply = await post(f"{server.url}/verify", {**row, "response": rollout["response"]})
        assert reply.status == 200, reply.text()
        ours = reply.json()
        assert set(ours) == (set(rollout) - STAMPS - LEGACY_COLUMNS) | {"verifier_metadata"}
        assert ours["reward"] == rollout["reward"]
        assert ours["follow_instruction_list"] == rollout["follow_instruction_list"]
        assert ours["follow_all_instructions"] == rollout["follow_all_instructions"]
        for column in LEGACY_COLUMNS:
            assert ours["verifier_metadata"][column] == rollout[column], column
        assert_echoed(ours, row, rollout["response"])
        table.append(
            f"  {position[row['id']]} ({row['id']}) | {ours['reward']} / {ours['follow_instruction_list']} | "
            f"{rollout['reward']} / {rollout['follow_instruction_list']} | match (columns: README item 7)"
        )
    print("\n" + "\n".join(table))
