"""mcqa over real HTTP: recorded-rollout compatibility, bad input, reverify mode, metrics, registration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardgym.config import load_config_from_flags
from rewardgym.environments.mcqa.app import MCQAServer
from rewardgym.environments.mcqa.tests.test_mcqa import KNOWN_DIFFERENCES, _compat_rows, _request
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
    with ThreadedServer(MCQAServer({"name": "mcqa", "log_level": "WARNING"})) as running:
        yield running


async def test_http_compatibility_with_recorded_rollouts(server: ThreadedServer) -> None:
    table = ["mcqa over HTTP: row | ours reward / extracted | NeMo Gym reward / extracted | note"]
    for index, row, rollout in _compat_rows():
        reply = await post(f"{server.url}/verify", {**row, "response": rollout["response"]})
        assert reply.status == 200, reply.text()
        ours = reply.json()
        assert set(ours) == set(rollout) - STAMPS
        recorded = (float(rollout["reward"]), rollout["extracted_answer"])
        expected = KNOWN_DIFFERENCES.get(index, recorded)
        assert (ours["reward"], ours["extracted_answer"]) == expected
        assert ours["expected_answer"] == rollout["expected_answer"]
        assert_echoed(ours, row, rollout["response"])
        note = "README: recorded before the letter-label rule" if index in KNOWN_DIFFERENCES else "match"
        table.append(
            f"  {index} | {ours['reward']} / {ours['extracted_answer']} | "
            f"{rollout['reward']} / {rollout['extracted_answer']} | {note}"
        )
    print("\n" + "\n".join(table))


async def test_missing_or_invalid_row_fields_are_422_naming_the_field(server: ThreadedServer) -> None:
    row = dump(_request("\\boxed{B}", "B"))
    del row["response"]
    reply = await post(f"{server.url}/verify", row)
    assert reply.status == 422
    assert ["body", "response"] in [entry["loc"] for entry in reply.json()["detail"]]

    row = {**dump(_request("\\boxed{B}", "B")), "grading_mode": "fuzzy"}
    reply = await post(f"{server.url}/verify", row)
    assert reply.status == 422
    assert "body.grading_mode" in reply.json()["error"]["message"]


async def test_a_template_regex_with_two_groups_is_422_naming_the_field(server: ThreadedServer) -> None:
    body = _request("Answer: B", "B", template={"output_regex": "(Answer):\\s*([A-Z])"})
    reply = await post(f"{server.url}/verify", dump(body))
    assert reply.status == 422
    answer = reply.json()
    assert answer["detail"][0]["loc"] == ["body", "template_metadata", "output_regex"]
    assert "2 groups" in answer["error"]["message"]
    assert "reward" not in answer


async def test_no_assistant_message_scores_zero(server: ThreadedServer) -> None:
    row = dump(_request(None, "B"))
    row["response"]["output"] = [{"type": "reasoning", "id": "rs_1", "summary": []}]
    reply = await post(f"{server.url}/verify", row)
    assert reply.status == 200
    assert (reply.json()["reward"], reply.json()["extracted_answer"]) == (0.0, None)


async def test_config_grading_mode_applies_over_http() -> None:
    with ThreadedServer(
        MCQAServer({"name": "mcqa", "log_level": "WARNING", "grading_mode": "lenient_answer_colon"})
    ) as colon:
        reply = await post(f"{colon.url}/verify", dump(_request("Answer: B", "B")))
    assert (reply.json()["reward"], reply.json()["extracted_answer"]) == (1.0, "B")


async def test_reverify_mode_is_stateless(server: ThreadedServer) -> None:
    async with HttpClient() as http:
        reply = await http.get(f"{server.url}/reverify_mode")
    assert reply.json() == "stateless"


async def test_aggregate_metrics_pass_and_majority(server: ThreadedServer) -> None:
    rows = [
        {"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1.0, "extracted_answer": "B"},
        {"_ng_task_index": 0, "_ng_rollout_index": 1, "reward": 0.0, "extracted_answer": "C"},
        {"_ng_task_index": 1, "_ng_rollout_index": 0, "reward": 0.0, "extracted_answer": None},
        {"_ng_task_index": 1, "_ng_rollout_index": 1, "reward": 0.0, "extracted_answer": "A"},
    ]
    reply = await post(f"{server.url}/aggregate_metrics", {"verify_responses": rows})
    assert reply.status == 200
    body = reply.json()
    assert body["key_metrics"] == {
        "mean/reward": 0.25,
        "pass@1[avg-of-2]/accuracy": 25.0,
        "pass@1[avg-of-2]/no_answer": 25.0,
        "pass@2/no_answer": 50.0,
        "majority@2/accuracy": 25.0,
        "pass@1/accuracy": 25.0,
    }
    assert body["agent_metrics"]["pass@2/accuracy"] == 50.0
    assert [group["_ng_task_index"] for group in body["group_level_metrics"]] == [0, 1]


def test_registered_and_config_fields_checked() -> None:
    assert lookup("resources_servers", "mcqa") is MCQAServer
    with pytest.raises(ConfigError, match=r"mcqa\.grading_mod: unknown field"):
        MCQAServer({"name": "mcqa", "grading_mod": "lenient_boxed"})
    with pytest.raises(ConfigError, match=r"mcqa\.grading_mode"):
        MCQAServer({"name": "mcqa", "grading_mode": "fuzzy"})


def test_shipped_config_builds_it(tmp_path: Path) -> None:
    cfg = load_config_from_flags(
        resources_servers=["mcqa"],
        model_types=["openai_model"],
        overrides=POLICY,
        env_yaml=False,
        cwd=tmp_path,
    )
    specs = child_specs(cfg, log_dir=tmp_path)
    validate_specs(specs)
    spec = next(spec for spec in specs if spec.kind == "resources_servers")
    built = server_class(spec.kind, spec.implementation)(spec.config)
    assert isinstance(built, MCQAServer)
    assert built.config.grading_mode is None
