"""`gym env validate`, `gym env test`, `gym env schema`: an environment checked without starting it."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.profile.helpers import cli

CONFIG = """\
mine_simple_agent:
  responses_api_agents:
    simple_agent:
      resources_server: {type: resources_servers, name: mcqa}
      model_server: {type: responses_api_models, name: policy_model}
      datasets:
      - {name: rows, type: train, jsonl_fpath: rows.jsonl}
"""


def test_validate_checks_servers_and_datasets(tmp_path: Path) -> None:
    run = cli("env", "validate", "--resources-server", "mcqa", "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    report = orjson.loads(run.stdout)
    assert report["valid"] is True
    assert {s["name"] for s in report["servers"]} >= {"mcqa", "mcqa_simple_agent"}
    assert [(d["name"], d["type"], d["rows"]) for d in report["datasets"]] == [("example", "example", 5)]
    (tmp_path / "c.yaml").write_text(CONFIG)
    (tmp_path / "rows.jsonl").write_text('{"responses_create_params": {"input": "q"}}\n{"no_params": 1}\n')
    bad = cli("env", "validate", "--resources-server", "mcqa", "--config", "c.yaml", cwd=tmp_path)
    assert bad.returncode == 1 and "rows.jsonl:2: row has no 'responses_create_params' object" in bad.stderr
    field = cli(
        "env", "validate", "--resources-server", "mcqa", "++mcqa.resources_servers.mcqa.grading_mod=x"
    )
    assert field.returncode == 1 and "grading_mod" in field.stderr


def test_test_runs_the_environment_tests_and_returns_their_code(tmp_path: Path) -> None:
    env = tmp_path / "myenv"
    (env / "tests").mkdir(parents=True)
    (env / "tests" / "test_ok.py").write_text("def test_ok() -> None:\n    assert 1 + 1 == 2\n")
    assert cli("env", "test", str(env)).returncode == 0
    (env / "tests" / "test_bad.py").write_text("def test_bad() -> None:\n    assert 1 + 1 == 3\n")
    assert cli("env", "test", str(env)).returncode == 1
    missing = cli("env", "test", "no_such_env")
    assert missing.returncode == 2 and "no environment 'no_such_env'" in missing.stderr


def test_schema_is_the_config_model_of_the_implementation() -> None:
    run = cli("env", "schema", "mcqa")
    assert run.returncode == 0, run.stderr
    assert "grading_mode" in orjson.loads(run.stdout)["properties"]
    agent = orjson.loads(cli("env", "schema", "simple_agent", "--kind", "responses_api_agents").stdout)
    assert "max_steps" in agent["properties"]
    assert cli("env", "schema", "mcqa", "--kind", "nope").returncode == 2
