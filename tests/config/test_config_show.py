"""`gym config show` end to end: output, masking, flags, and one readable error per bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rewardgym.cli.main import main
from tests.config.conftest import WriteFile

SECRET = "sk-TESTSECRET123"
FLAG_SECRET = "flag-key-NOTPRINTED-9931"

MODEL = """
policy_model:
  responses_api_models:
    openai_model:
      entrypoint: app.py
      openai_base_url: ${policy_base_url}
      openai_api_key: ${policy_api_key}
      openai_model: ${policy_model_name}
"""
ENV = f"""
policy_base_url: http://127.0.0.1:8000/v1
policy_api_key: {SECRET}
policy_model_name: test-model
"""
MCQA = """
config_paths: [model.yaml]
mcqa:
  resources_servers:
    mcqa: {entrypoint: app.py, domain: knowledge}
mcqa_simple_agent:
  responses_api_agents:
    simple_agent:
      resources_server: {type: resources_servers, name: mcqa}
      model_server: {type: responses_api_models, name: policy_model}
"""


@pytest.fixture
def project(tmp_path: Path, write: WriteFile, monkeypatch: pytest.MonkeyPatch) -> Path:
    write("env.yaml", ENV)
    write("model.yaml", MODEL)
    write("mcqa.yaml", MCQA)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _show(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["config", "show", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_show_prints_resolved_yaml_with_secrets_masked(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _show(capsys, "--config", "mcqa.yaml", "++num_repeats={simple_agent: 4, _default: 1}")
    assert code == 0, err
    assert SECRET not in out + err
    data = yaml.safe_load(out)
    model = data["policy_model"]["responses_api_models"]["openai_model"]
    assert model["openai_api_key"] == "***"
    assert data["policy_api_key"] == "***"
    assert model["openai_base_url"] == "http://127.0.0.1:8000/v1"
    assert model["openai_model"] == "test-model"
    assert isinstance(model["port"], int)
    assert data["num_repeats"] == {"simple_agent": 4, "_default": 1}
    assert data["head_server"] == {"host": "127.0.0.1", "port": 11000}
    assert list(data)[:3] == ["policy_model", "mcqa", "mcqa_simple_agent"]


def test_show_json_and_model_flags(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _show(
        capsys,
        "--config",
        "mcqa.yaml",
        "--json",
        "-m",
        "flag-model",
        "--model-url",
        "http://flag:9/v1",
        "--model-api-key",
        FLAG_SECRET,
    )
    assert code == 0, err
    data = json.loads(out)
    model = data["policy_model"]["responses_api_models"]["openai_model"]
    assert (model["openai_model"], model["openai_base_url"], model["openai_api_key"]) == (
        "flag-model",
        "http://flag:9/v1",
        "***",
    )
    assert FLAG_SECRET not in out + err
    assert SECRET not in out + err


def test_show_asset_selectors(project: Path, write: WriteFile, capsys: pytest.CaptureFixture[str]) -> None:
    write("responses_api_models/my_model/configs/my_model.yaml", MODEL)
    write("resources_servers/my_env/configs/my_env.yaml", MCQA.replace("config_paths: [model.yaml]\n", ""))
    code, out, err = _show(capsys, "--model-type", "my_model", "--resources-server", "my_env")
    assert code == 0, err
    assert set(yaml.safe_load(out)) >= {"policy_model", "mcqa", "mcqa_simple_agent"}


def test_show_allow_missing(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _show(capsys, "++limit=???", "--allow-missing")
    assert code == 0
    assert yaml.safe_load(out)["limit"] == "???"


BAD_INPUTS = [
    pytest.param(["--config", "broken.yaml"], "broken.yaml:3:1: malformed YAML", id="malformed-yaml"),
    pytest.param(["--config", "absent.yaml"], "config file not found: 'absent.yaml'", id="missing-file"),
    pytest.param(
        [
            "--config",
            "mcqa.yaml",
            "++mcqa_simple_agent.responses_api_agents.simple_agent.resources_server.name=mcq",
        ],
        "(did you mean 'mcqa'?)",
        id="missing-reference",
    ),
    pytest.param(
        ["--config", "mcqa.yaml", "+policy_api_key=other"],
        "'policy_api_key' is already set; use ++policy_api_key=",
        id="plus-existing",
    ),
    pytest.param(["++a=[1,2"], "override '++a=[1,2': cannot parse the value", id="unparsable-value"),
    pytest.param(
        ["++limit=${nowhere}"], "'nowhere' is not set; set it, e.g. ++nowhere=<value>", id="unresolved"
    ),
    pytest.param(
        ["++limit=???", "++responses_create_params.c=???"],
        "2 required config values are missing (???); set them on the command line, in env.yaml or in a "
        "config file:\n  ++limit=<value>\n  ++responses_create_params.c=<value>",
        id="missing-values",
    ),
    pytest.param(
        ["++x={resources_servers: {a: {}}, responses_api_agents: {b: {}}}"],
        "server instance 'x': has several server kinds",
        id="almost-server",
    ),
    pytest.param(["a=1"], "config overrides are written +key=value or ++key=value", id="plain-key-value"),
    pytest.param(
        ["--resources-server", "nosuch_env"], "no resources server config named 'nosuch_env'", id="asset"
    ),
]


@pytest.mark.parametrize(("args", "fragment"), BAD_INPUTS)
def test_bad_inputs_give_one_readable_error(
    project: Path, write: WriteFile, capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    write("broken.yaml", f"policy_api_key: {SECRET}\nbad: [1, 2\n")
    code, out, err = _show(capsys, *args)
    assert code != 0
    assert out == ""
    assert err.startswith("Error: ")
    assert err.count("Error:") == 1
    assert fragment in err
    assert "Traceback" not in err
    assert SECRET not in err


def test_missing_api_key_error_stays_readable(
    project: Path, write: WriteFile, capsys: pytest.CaptureFixture[str]
) -> None:
    write("env.yaml", "policy_base_url: http://127.0.0.1:8000/v1\npolicy_model_name: m\n")
    code, out, err = _show(capsys, "--config", "mcqa.yaml")
    assert code == 1
    assert out == ""
    assert err == (
        "Error: policy_model.responses_api_models.openai_model.openai_api_key: cannot resolve interpolation "
        "(${policy_api_key}): key 'policy_api_key' is not set; set it, e.g. ++policy_api_key=<value> "
        "(or --model-api-key, or in env.yaml)\n"
    )


def test_subprocess_exit_codes_and_no_secret(project: Path) -> None:
    ok = subprocess.run(
        [sys.executable, "-m", "rewardgym", "config", "show", "--config", "mcqa.yaml"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert "openai_api_key: '***'" in ok.stdout
    assert SECRET not in ok.stdout + ok.stderr
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "rewardgym",
            "config",
            "show",
            "--config",
            "mcqa.yaml",
            "++limit=${missing_key}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 1
    assert bad.stdout == ""
    assert bad.stderr.startswith("Error: limit: cannot resolve interpolation")
    assert "Traceback" not in bad.stderr
    assert SECRET not in bad.stdout + bad.stderr


HEADER_SECRETS = {
    "Proxy-Authorization": "Basic cHJveHk6c2VjcmV0LXByb3h5",
    "Ocp-Apim-Subscription-Key": "apim-subscription-4711",
    "Cookie": "session=cookie-value-0815",
    "X-Auth-Token": "x-auth-value-1234",
    "X-Custom-Whatever": "custom-header-value-9",
}


def test_every_header_value_is_a_secret_unless_allow_listed(
    project: Path, write: WriteFile, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 22 (3): header names outside the secret-key rule are masked too (only a short allow-list of
    plain headers is shown), in `gym config show` and in every text printed later."""
    headers = {**HEADER_SECRETS, "Content-Type": "application/json", "User-Agent": "rg-test"}
    write("headers.yaml", yaml.safe_dump({"policy_model": {"responses_api_models": {"openai_model": {
        "openai_default_headers": headers}}}}))  # fmt: skip
    code, out, err = _show(capsys, "--config", "mcqa.yaml", "--config", "headers.yaml")
    assert code == 0, err
    shown = yaml.safe_load(out)["policy_model"]["responses_api_models"]["openai_model"][
        "openai_default_headers"
    ]
    assert shown == {**dict.fromkeys(HEADER_SECRETS, "***"), "Content-Type": "application/json",
                     "User-Agent": "rg-test"}  # fmt: skip
    for value in HEADER_SECRETS.values():
        assert value not in out + err
