"""Every shipped environment's ``verifier_cases.jsonl`` (``rewardgym.testing.cases``) over real HTTP, and what
every such environment shares: it is registered under its folder's name, its shipped config builds it through
the config loader, an unknown config field is an error naming it, and ``GET /reverify_mode`` answers the mode
its class declares."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from rewardgym.config import load_config_from_flags
from rewardgym.errors import ConfigError, DataError
from rewardgym.launch.child_spec import server_class
from rewardgym.launch.from_config import child_specs, validate_specs
from rewardgym.launch.serve import ThreadedServer
from rewardgym.registry import lookup
from rewardgym.testing import call
from rewardgym.testing.cases import CASES_FILE, check_cases, load_cases

ENVIRONMENTS = Path(__file__).resolve().parents[2] / "src" / "rewardgym" / "environments"
NAMES = sorted(path.parent.name for path in ENVIRONMENTS.glob(f"*/{CASES_FILE}"))
POLICY = ["++policy_base_url=http://127.0.0.1:9/v1", "++policy_api_key=dummy", "++policy_model_name=m"]


def _server(name: str, config: dict[str, Any]) -> Any:
    return lookup("resources_servers", name)({"name": name, "log_level": "WARNING", **config})


def test_the_environments_with_cases() -> None:
    assert len(NAMES) >= 10, NAMES  # a renamed file would silently run nothing


@pytest.mark.parametrize("name", NAMES)
def test_verifier_cases(name: str) -> None:
    cases = load_cases(ENVIRONMENTS / name / CASES_FILE)
    assert cases
    assert check_cases(lambda config: _server(name, config), cases) == []


@pytest.mark.parametrize("name", NAMES)
def test_registered_and_built_from_the_shipped_config(name: str, tmp_path: Path) -> None:
    cls = lookup("resources_servers", name)
    assert cls.__module__.startswith(f"rewardgym.environments.{name}.")
    cfg = load_config_from_flags(
        resources_servers=[name], model_types=["openai_model"], overrides=POLICY, env_yaml=False, cwd=tmp_path
    )
    specs = child_specs(cfg, log_dir=tmp_path)
    validate_specs(specs)
    spec = next(spec for spec in specs if spec.kind == "resources_servers")
    assert isinstance(server_class(spec.kind, spec.implementation)(spec.config), cls)
    with pytest.raises(ConfigError, match=rf"{name}\.no_such_field: unknown field"):
        _server(name, {"no_such_field": 1})
    with ThreadedServer(_server(name, {})) as server:
        assert call(server.url, "GET", "/reverify_mode").json() == cls.reverify_mode.value


def test_a_case_that_does_not_hold_is_reported(tmp_path: Path) -> None:
    row = {"responses_create_params": {"input": "Q?"}, "expected_answer": "Paris"}
    wrong = [
        {"case": "wrong reward", "row": row, "answer": "Final answer: Paris", "expect": {"reward": 0.0}},
        {"case": "wrong status", "row": row},  # no response: 422, not 200
        {"case": "wrong loc", "row": row, "status": 422, "error_loc": ["body", "other"]},
    ]  # fmt: skip
    path = tmp_path / CASES_FILE
    path.write_text("\n".join(orjson.dumps(case).decode() for case in wrong) + "\n")
    problems = check_cases(lambda config: _server("string_match", config), load_cases(path))
    assert [problem.split(":")[0] for problem in problems] == ["wrong reward", "wrong status", "wrong loc"]
    path.write_text('{"case": "x", "row": {}}\n{"case": "typo", "rwo": {}}\n')
    with pytest.raises(DataError, match=rf"{CASES_FILE}:2: not a verifier case"):
        load_cases(path)
