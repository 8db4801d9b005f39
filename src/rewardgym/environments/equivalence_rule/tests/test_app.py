"""equivalence_rule over real HTTP: recorded-rollout compatibility, bad input, configs, registration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardgym.config import load_config_from_flags
from rewardgym.environments.equivalence_rule.app import EquivalenceRuleServer
from rewardgym.environments.equivalence_rule.tests.test_equivalence_rule import (
    DATA,
    _lines,
    _prompt,
)
from rewardgym.errors import ConfigError
from rewardgym.launch.child_spec import server_class
from rewardgym.launch.from_config import child_specs, validate_specs
from rewardgym.launch.serve import ThreadedServer
from rewardgym.registry import lookup
from rewardgym.testing import assert_echoed, post

STAMPS = {"_ng_task_index", "_ng_rollout_index", "agent_ref"}
"""Columns the collector adds to a rollout row (``agent_ref`` is also a row field here, echoed)."""
POLICY = ["++policy_base_url=http://127.0.0.1:9/v1", "++policy_api_key=dummy", "++policy_model_name=m"]
ECHOED_ROW_FIELDS = ("expected_answer", "question", "dataset", "source", "hashid", "context_length")


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    config = {"name": "lc_equivalence_rule", "log_level": "WARNING", "grading_rule": "exact"}
    with ThreadedServer(EquivalenceRuleServer(config)) as running:
        yield running


async def test_http_compatibility_with_recorded_rollouts(server: ThreadedServer) -> None:
    examples = _lines(DATA / "example.jsonl")
    by_prompt = {_prompt(row): index for index, row in enumerate(examples)}
    rollouts = _lines(DATA / "example_rollouts.jsonl")
    pairs = sorted(((by_prompt[_prompt(r)], r) for r in rollouts), key=lambda pair: pair[0])
    assert [index for index, _ in pairs] == [0, 1, 2, 3, 4]
    table = ["equivalence_rule (exact) over HTTP: row | ours reward / score | NeMo Gym reward / score | note"]
    for index, rollout in pairs:
        row = examples[index]
        reply = await post(f"{server.url}/verify", {**row, "response": rollout["response"]})
        assert reply.status == 200, reply.text()
        ours = reply.json()
        assert set(ours) - STAMPS == set(rollout) - STAMPS
        assert ours["agent_ref"] == row["agent_ref"] == rollout["agent_ref"]
        assert (ours["reward"], ours["equivalence_score"]) == (
            rollout["reward"],
            rollout["equivalence_score"],
        )
        for key in ECHOED_ROW_FIELDS:
            assert ours[key] == rollout[key], key
        assert_echoed(ours, row, rollout["response"])
        table.append(
            f"  {index} | {ours['reward']} / {ours['equivalence_score']} | "
            f"{rollout['reward']} / {rollout['equivalence_score']} | match"
        )
    print("\n" + "\n".join(table))


@pytest.mark.parametrize("selector", ["equivalence_rule", "equivalence_rule/lc"])
def test_both_selectors_build_nemo_gym_instance_names(selector: str, tmp_path: Path) -> None:
    cfg = load_config_from_flags(
        resources_servers=[selector],
        model_types=["openai_model"],
        overrides=POLICY,
        env_yaml=False,
        cwd=tmp_path,
    )
    assert set(cfg.instances) == {"policy_model", "lc_equivalence_rule", "lc_equivalence_rule_simple_agent"}
    specs = child_specs(cfg, log_dir=tmp_path)
    validate_specs(specs)
    spec = next(spec for spec in specs if spec.kind == "resources_servers")
    built = server_class(spec.kind, spec.implementation)(spec.config)
    assert isinstance(built, EquivalenceRuleServer)
    assert (built.config.name, built.config.grading_rule) == ("lc_equivalence_rule", "exact")


def test_registered_and_config_fields_checked() -> None:
    assert lookup("resources_servers", "equivalence_rule") is EquivalenceRuleServer
    with pytest.raises(ConfigError, match=r"eq\.grading_rul: unknown field"):
        EquivalenceRuleServer({"name": "eq", "grading_rul": "exact"})
    with pytest.raises(ConfigError, match="name: Field required"):
        EquivalenceRuleServer({"grading_rule": "exact"})
