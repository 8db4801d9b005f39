"""instruction_following over real HTTP: recorded-rollout compatibility, bad input, reverify mode, config."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardgym.config import load_config_from_flags
from rewardgym.environments.instruction_following.app import InstructionFollowingServer
from rewardgym.environments.instruction_following.tests.test_instruction_following import (
    ROLLOUTS,
    ROWS_BY_PROMPT,
    _lines,
    _prompt,
    _response,
    _row,
)
from rewardgym.errors import ConfigError
from rewardgym.http.client import HttpClient
from rewardgym.launch.child_spec import server_class
from rewardgym.launch.from_config import child_specs, validate_specs
from rewardgym.launch.serve import ThreadedServer
from rewardgym.registry import lookup
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


@pytest.mark.parametrize(
    ("missing", "loc"), [("id", ["body", "id"]), ("kwargs", ["body", "verifier_metadata", "kwargs"])]
)
async def test_missing_row_field_is_422_naming_it(
    server: ThreadedServer, missing: str, loc: list[str]
) -> None:
    row = {**_row(["detectable_format:title"], [{}]), "response": _response()}
    del row[missing]
    reply = await post(f"{server.url}/verify", row)
    assert reply.status == 422
    assert loc in [entry["loc"] for entry in reply.json()["detail"]]


async def test_no_assistant_message_scores_zero(server: ThreadedServer) -> None:
    row = ROWS_BY_PROMPT[_prompt(ROLLOUTS[0])]
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}]}
    reply = await post(f"{server.url}/verify", {**row, "response": _response(reasoning)})
    assert reply.status == 200
    ours = reply.json()
    assert (ours["reward"], ours["follow_all_instructions"]) == (0.0, False)
    assert len(ours["follow_instruction_list"]) == len(row["instruction_id_list"])


async def test_reverify_mode_is_stateless(server: ThreadedServer) -> None:
    async with HttpClient() as http:
        reply = await http.get(f"{server.url}/reverify_mode")
    assert reply.json() == "stateless"


def test_registered_and_shipped_config_builds_it(tmp_path: Path) -> None:
    assert lookup("resources_servers", "instruction_following") is InstructionFollowingServer
    cfg = load_config_from_flags(
        resources_servers=["instruction_following"],
        model_types=["openai_model"],
        overrides=POLICY,
        env_yaml=False,
        cwd=tmp_path,
    )
    specs = child_specs(cfg, log_dir=tmp_path)
    validate_specs(specs)
    spec = next(spec for spec in specs if spec.kind == "resources_servers")
    assert isinstance(server_class(spec.kind, spec.implementation)(spec.config), InstructionFollowingServer)
    with pytest.raises(ConfigError, match=r"if\.grading_mode: unknown field"):
        InstructionFollowingServer({"name": "if", "grading_mode": "binary"})
