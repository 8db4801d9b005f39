"""string_match over real HTTP: recorded-rollout compatibility, bad input, reverify mode, registration."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rewardgym.environments.string_match.app import StringMatchServer
from rewardgym.environments.string_match.tests.test_string_match import (
    DATA,
    _lines,
    _prompt,
)
from rewardgym.launch.serve import ThreadedServer
from rewardgym.testing import COLLECTOR_COLUMNS, assert_echoed, post

STAMPS = COLLECTOR_COLUMNS
POLICY = ["++policy_base_url=http://127.0.0.1:9/v1", "++policy_api_key=dummy", "++policy_model_name=m"]


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    with ThreadedServer(StringMatchServer({"name": "string_match", "log_level": "WARNING"})) as running:
        yield running


async def test_http_compatibility_with_recorded_rollouts(server: ThreadedServer) -> None:
    examples = _lines(DATA / "example.jsonl")
    by_prompt = {_prompt(row): index for index, row in enumerate(examples)}
    table = ["string_match over HTTP: row | ours reward / extracted | NeMo Gym reward / extracted | note"]
    rollouts = _lines(DATA / "example_rollouts.jsonl")
    pairs = sorted(((by_prompt[_prompt(r)], r) for r in rollouts), key=lambda pair: pair[0])
    assert [index for index, _ in pairs] == [0, 1, 2, 3, 4]
    for index, rollout in pairs:
        assert rollout["_ng_task_index"] == index
        row = examples[index]
        reply = await post(f"{server.url}/verify", {**row, "response": rollout["response"]})
        assert reply.status == 200, reply.text()
        ours = reply.json()
        assert set(ours) == set(rollout) - STAMPS
        assert (ours["reward"], ours["extracted_answer"]) == (rollout["reward"], rollout["extracted_answer"])
        assert ours["expected_answer"] == rollout["expected_answer"]
        assert_echoed(ours, row, rollout["response"])
        table.append(
            f"  {index} | {ours['reward']} / {ours['extracted_answer']} | "
            f"{rollout['reward']} / {rollout['extracted_answer']} | match"
        )
    print("\n" + "\n".join(table))
