"""Secret detection and redaction: keys, structures, free text, and values registered by load_config."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from rewardgym.config import (
    cli_overrides_from_flags,
    is_secret_key,
    load_config,
    redact,
    redact_text,
    register_secret,
)
from tests.config.conftest import WriteFile


@pytest.mark.parametrize(
    "key",
    ["api_key", "policy_api_key", "OPENAI_API_KEY", "auth_token", "hf_token", "token", "client_secret",
     "db_password", "Authorization", "model-api-key"],
)  # fmt: skip
def test_secret_keys(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "max_tokens",
        "max_output_tokens",
        "input_tokens",
        "tokenizer",
        "token_id",
        "secret_name",
        "model",
        3,
        None,
    ],
)
def test_non_secret_keys(key: object) -> None:
    assert not is_secret_key(key)


def test_redact_nested_structures_keeps_unset_values() -> None:
    data = {
        "policy_api_key": "abc123456",
        "nested": [{"hf_token": "x" * 12, "other": 1}, {"auth_token": None, "password": ""}],
        "keep": "value",
        "tuple": ({"secret": ["a", "b"]},),
    }
    out = redact(data)
    assert out == {
        "policy_api_key": "***",
        "nested": [{"hf_token": "***", "other": 1}, {"auth_token": None, "password": ""}],
        "keep": "value",
        "tuple": ({"secret": "***"},),
    }
    assert data["policy_api_key"] == "abc123456"  # a copy


def test_redact_dictconfig_returns_dictconfig() -> None:
    cfg = OmegaConf.create({"policy_api_key": "abcdef123", "model": {"api_key": "${policy_api_key}"}})
    out = redact(cfg)
    assert isinstance(out, DictConfig)
    assert OmegaConf.to_container(out, resolve=True) == {"policy_api_key": "***", "model": {"api_key": "***"}}


def test_redact_text_registered_and_given_values() -> None:
    register_secret("REGISTERED-value-42")
    text = "url=http://h/?k=REGISTERED-value-42 other=GIVENsecret99 short=abc"
    out = redact_text(text, secrets=["GIVENsecret99"])
    assert "REGISTERED-value-42" not in out
    assert "GIVENsecret99" not in out
    assert "short=abc" in out


@pytest.mark.parametrize(
    ("text", "leak"),
    [
        ("calling with key sk-abcdefghijklmnop", "sk-abcdefghijklmnop"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload", "eyJhbGciOiJIUzI1NiJ9"),
        ("openai_api_key=plainvalue123 next", "plainvalue123"),
        ('{"hf_token": "hfvalue12345"}', "hfvalue12345"),
        ("token hf_abcdefghijklmnopqrst here", "hf_abcdefghijklmnopqrst"),
        ("nvapi-ABCDEFGHIJKLMNOP", "nvapi-ABCDEFGHIJKLMNOP"),
    ],
)
def test_redact_text_patterns(text: str, leak: str) -> None:
    out = redact_text(text)
    assert leak not in out
    assert "***" in out


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens: 512 and max_output_tokens=100",
        "set it, e.g. ++policy_api_key=<value>",
        "policy_api_key: '***'",
        "interpolation ${policy_api_key} is not set",
        "m.openai_api_key: cannot resolve interpolation (${policy_api_key}): key 'policy_api_key' is not set",
        "send a bearer token in the header",
    ],
)
def test_redact_text_leaves_harmless_text_alone(text: str) -> None:
    assert redact_text(text) == text


def test_load_config_registers_secrets_from_env_yaml(tmp_path: Path, write: WriteFile) -> None:
    write("env.yaml", "hf_token: ENVYAMLVALUE-7781\n")
    cfg = load_config([], cwd=tmp_path)
    assert cfg.to_dict()["hf_token"] == "ENVYAMLVALUE-7781"
    assert cfg.redacted()["hf_token"] == "***"
    assert redact_text("leaked ENVYAMLVALUE-7781 here") == "leaked *** here"


def test_secret_from_environment_variable_is_registered(
    tmp_path: Path, write: WriteFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RG_TEST_KEY_VAR", "FROMENVIRONMENT-5521")
    write("m.yaml", "model:\n  api_key: ${oc.env:RG_TEST_KEY_VAR}\n  url: http://x\n")
    cfg = load_config(["m.yaml"], cwd=tmp_path)
    assert cfg.get("model.api_key") == "FROMENVIRONMENT-5521"
    assert "FROMENVIRONMENT-5521" not in cfg.to_yaml()
    assert redact_text("x FROMENVIRONMENT-5521") == "x ***"


def test_model_flags_map_to_policy_keys_literally(tmp_path: Path, write: WriteFile) -> None:
    write("env.yaml", "policy_model_name: from-env\npolicy_base_url: http://env\n")
    tokens = cli_overrides_from_flags(model="true", model_url="http://h:1/v1", model_api_key="key-${x}: {y}")
    cfg = load_config([], tokens, cwd=tmp_path)
    assert cfg.get("policy_model_name") == "true"
    assert cfg.get("policy_base_url") == "http://h:1/v1"
    assert cfg.get("policy_api_key") == "key-${x}: {y}"
    assert cfg.redacted()["policy_api_key"] == "***"
    assert cli_overrides_from_flags() == []


def test_stored_bytes_mask_known_secrets_only() -> None:
    """Issue 22 (3): a row about to be stored loses every registered secret in every form, and nothing
    that merely looks like a credential (that is data)."""
    import json

    from rewardgym.config.secrets import mask_known_secrets

    register_secret('stored-"key"-é-5f1c9a')
    row = {
        "text": 'echo stored-"key"-é-5f1c9a and sk-looks-like-a-key-123',
        "nested": json.dumps({"k": 'stored-"key"-é-5f1c9a'}),
    }
    data = mask_known_secrets(json.dumps(row, ensure_ascii=False).encode())
    assert b"stored-" not in data and b"5f1c9a" not in data
    assert b"sk-looks-like-a-key-123" in data
    assert json.loads(data)["text"] == "echo *** and sk-looks-like-a-key-123"


def test_children_get_no_variable_holding_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22 (3): a value ``${oc.env:VAR}`` read as a secret leaves the server processes' environment."""
    from rewardgym.config.secrets import child_environ

    monkeypatch.setenv("RG_TEST_SECRET_VAR", "env-secret-value-31337")
    monkeypatch.setenv("RG_TEST_PLAIN_VAR", "plain")
    assert "RG_TEST_SECRET_VAR" in child_environ()
    register_secret("env-secret-value-31337")
    env = child_environ(EXTRA="1")
    assert "RG_TEST_SECRET_VAR" not in env and env["RG_TEST_PLAIN_VAR"] == "plain" and env["EXTRA"] == "1"
    assert "RG_TEST_SECRET_VAR" in child_environ(drop_secret_values=False)
