"""string_match over real HTTP: recorded-rollout compatibility, bad input, reverify mode, registration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardgym.config import load_config_from_flags
from rewardgym.environments.string_match.app import StringMatchServer
from rewardgym.environments.string_match.tests.test_string_match import (
    DATA,
    _lines,
    _message,
    _prompt,
    _request,
)
from rewardgym.errors import ConfigError
from rewardgym.http.client import HttpClient
from rewardgym.launch.child_spec import server_class
from rewardgym.launch.from_config import child_specs, validate_specs
from rewardgym.launch.serve import ThreadedServer
from rewardgym.protocol import dump
from rewardgym.registry import lookup
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


async def test_missing_or_invalid_row_fields_are_422_naming_the_field(server: ThreadedServer) -> None:
    row = dump(_request([_message("Paris")], "Paris"))
    del row["expected_answer"]
    reply = await post(f"{server.url}/verify", row)
    assert reply.status == 422
    assert ["body", "expected_answer"] in [entry["loc"] for entry in reply.json()["detail"]]

    row = {**dump(_request([_message("Paris")], "Paris")), "extraction_mode": "regex"}
    reply = await post(f"{server.url}/verify", row)
    assert reply.status == 422
    assert "body.extraction_mode" in reply.json()["error"]["message"]


async def test_no_assistant_message_scores_zero(server: ThreadedServer) -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Paris"}]}
    row = dump(_request([reasoning], "Paris", extraction_mode="full_response"))
    reply = await post(f"{server.url}/verify", row)
    assert reply.status == 200
    assert (reply.json()["reward"], reply.json()["extracted_answer"]) == (0.0, None)


async def test_reverify_mode_is_stateless(server: ThreadedServer) -> None:
    async with HttpClient() as http:
        reply = await http.get(f"{server.url}/reverify_mode")
    assert reply.json() == "stateless"


def test_registered_and_config_fields_checked() -> None:
    assert lookup("resources_servers", "string_match") is StringMatchServer
    with pytest.raises(ConfigError, match=r"string_match\.grading_rule: unknown field"):
        StringMatchServer({"name": "string_match", "grading_rule": "exact"})


def test_shipped_config_builds_it(tmp_path: Path) -> None:
    cfg = load_config_from_flags(
        resources_servers=["string_match"],
        model_types=["openai_model"],
        overrides=POLICY,
        env_yaml=False,
        cwd=tmp_path,
    )
    specs = child_specs(cfg, log_dir=tmp_path)
    validate_specs(specs)
    spec = next(spec for spec in specs if spec.kind == "resources_servers")
    built = server_class(spec.kind, spec.implementation)(spec.config)
    assert isinstance(built, StringMatchServer)
