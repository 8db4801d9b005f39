"""Issue 11: every encoding of a secret is masked; URL credentials, CR/LF headers and ``${oc.env:…}`` values.

Unit level (the real loader on real files): the one redaction function and the start-up guards.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import quote, quote_plus

import orjson
import pytest

from rewardgym.config import load_config, redact_text, register_secret
from rewardgym.config.flags import MODEL_API_KEY_ENV, resolve_model_api_key
from rewardgym.config.secrets import child_environ, is_env_safe_key, secret_forms, url_credentials
from rewardgym.errors import ConfigError, UsageError
from rewardgym.http.errors import snippet
from tests.config.conftest import WriteFile

KEY = 'Gq"uo\\te/é€-7f3a9c2e'


def every_encoding(value: str) -> list[str]:
    once = [json.dumps(value), json.dumps(value, ensure_ascii=False), orjson.dumps(value).decode()]
    twice = [json.dumps(form) for form in once] + [orjson.dumps(form).decode() for form in once]
    return [
        value, *once, *twice, quote(value), quote(value, safe=""), quote_plus(value),
        re.sub("%[0-9A-F]{2}", lambda m: m[0].lower(), quote(value, safe="")),
        repr(value), str([value]), repr(value + "'"), json.dumps(value).replace("/", "\\/"),
        re.sub(r"\\u[0-9a-f]{4}", lambda m: "\\u" + m[0][2:].upper(), json.dumps(value)),
        value.encode().decode("latin-1"), json.dumps(value.encode().decode("latin-1")),
    ]  # fmt: skip


@pytest.mark.parametrize("encoded", every_encoding(KEY))
def test_a_registered_secret_is_masked_in_every_encoding(encoded: str) -> None:
    register_secret(KEY)
    out = redact_text(f"upstream said: {encoded} (end)")
    assert "Gq" not in out and "7f3a9c2e" not in out, out
    assert out.startswith("upstream said: ") and out.endswith(" (end)")


def test_forms_of_a_plain_key_are_few() -> None:
    assert secret_forms("abcdef123456") == frozenset({"abcdef123456"})  # the hot path stays one check


def test_a_body_is_redacted_before_it_is_cut() -> None:
    register_secret("CUTsecret-5b1d4a8e6c0f")
    for pad in range(470, 500):  # the cut falls before, inside and after the key
        shown = snippet("x" * pad + json.dumps({"key": "CUTsecret-5b1d4a8e6c0f"}), 500)
        assert "CUTs" not in shown and "e6c0f" not in shown, pad
    assert snippet("x" * 470 + json.dumps({"key": "CUTsecret-5b1d4a8e6c0f"}), 500).endswith('"***"}')


@pytest.mark.parametrize(
    "text", ["http://bob:hunter2pw@host/v1", "https://tok3nvalue@h:8/x", "redis://u:p4ssw0rd@h:6379"]
)
def test_url_credentials_are_masked_in_free_text(text: str) -> None:
    out = redact_text(f"cannot reach {text}: refused")
    assert "hunter2" not in out and "tok3n" not in out and "p4ssw0rd" not in out and "***@" in out


def test_url_credentials_helper() -> None:
    assert url_credentials("http://u:p@h/v1") == "u:p"
    assert url_credentials("https://tok@h") == "tok"
    assert url_credentials("http://h:8/v1?x=a@b") is None
    assert url_credentials("not a url u:p@h") is None


def test_a_url_with_credentials_is_refused_naming_the_field(write: WriteFile, tmp_path: Path) -> None:
    write(
        "c.yaml",
        """
        policy_base_url: http://alice:pw-7c1e9a3b@llm.example:8000/v1
        policy_api_key: ""
        policy_model_name: m
        policy_model:
          responses_api_models:
            vllm_model:
              base_url: ${policy_base_url}
              api_key: ${policy_api_key}
              model: ${policy_model_name}
        """,
    )
    with pytest.raises(ConfigError) as caught:
        load_config(["c.yaml"], cwd=tmp_path, env_yaml=False)
    message = str(caught.value)
    assert message.startswith("policy_base_url: ") and "policy_api_key" in message
    assert "pw-7c1e9a3b" not in message and "alice" not in message
    assert "pw-7c1e9a3b" not in redact_text("echo pw-7c1e9a3b")  # registered on the way: masked from now on


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ('++auth_token="tok-123\\r\\nX-Evil: 1"', "auth_token"),
        ('++policy_api_key="sk-123456\\nX-Evil: 1"', "policy_api_key"),
        (
            '++m.responses_api_models.vllm_model.default_headers={"X-A": "a\\r\\nX-Evil: 1"}',
            "default_headers.X-A",
        ),
    ],
)
def test_a_header_value_with_cr_or_lf_is_refused_at_load(
    override: str, field: str, write: WriteFile, tmp_path: Path
) -> None:
    write(
        "c.yaml",
        """
        policy_api_key: sk-plain-123
        m:
          responses_api_models:
            vllm_model:
              base_url: http://127.0.0.1:9/v1
              api_key: ${policy_api_key}
              model: x
        """,
    )
    with pytest.raises(ConfigError) as caught:
        load_config(["c.yaml"], [override], cwd=tmp_path, env_yaml=False)
    message = str(caught.value)
    assert field in message.split(":", 1)[0] and "X-Evil" not in message, message
    assert "CR" in message or "LF" in message


def test_environment_values_are_masked_unless_the_key_is_known_safe(
    write: WriteFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RG_TEST_SECRET", "envsecret-4d2b8f6a")
    monkeypatch.setenv("RG_TEST_SHORT", "abc")
    monkeypatch.setenv("RG_TEST_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("RG_TEST_FLAG", "true")
    monkeypatch.delenv("RG_TEST_UNSET", raising=False)
    write(
        "c.yaml",
        """
        judge_setting: ${oc.env:RG_TEST_SECRET}
        copy: ${judge_setting}
        inline: "Bearer ${oc.env:RG_TEST_SECRET}"
        listed: ["${oc.env:RG_TEST_SHORT}"]
        policy_base_url: ${oc.env:RG_TEST_URL}
        drop_items: ${oc.env:RG_TEST_FLAG}
        from_default: ${oc.env:RG_TEST_UNSET,shown-default-value}
        """,
    )
    cfg = load_config(["c.yaml"], cwd=tmp_path, env_yaml=False)
    shown = cfg.redacted()
    assert shown["judge_setting"] == shown["copy"] == "***"
    assert shown["inline"] == "***" and shown["listed"] == ["***"]  # short, so masked by its path
    assert shown["policy_base_url"] == "http://127.0.0.1:8000/v1" and shown["drop_items"] == "true"
    assert shown["from_default"] == "shown-default-value"  # not from the environment
    assert "envsecret" not in cfg.to_yaml() and "envsecret" not in redact_text("x envsecret-4d2b8f6a")
    assert cfg.get("judge_setting") == "envsecret-4d2b8f6a"  # the program still gets the value


def test_env_safe_keys() -> None:
    for key in ("policy_base_url", "model", "log_dir", "model_path", "host", "port", "policy_model_name"):
        assert is_env_safe_key(key), key
    for key in ("judge_setting", "api_key", "auth_token", "extra", "user"):
        assert not is_env_safe_key(key), key


def test_where_the_model_api_key_comes_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("from-file-123\nignored second line\n")
    env = {MODEL_API_KEY_ENV: "from-env-123"}
    assert resolve_model_api_key("from-flag", None, env) == "from-flag"
    assert resolve_model_api_key(None, key_file, env) == "from-file-123"
    assert resolve_model_api_key(None, None, env) == "from-env-123"
    assert resolve_model_api_key(None, None, {}) is None
    with pytest.raises(UsageError, match="not both"):
        resolve_model_api_key("a", key_file, env)
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(UsageError, match="empty"):
        resolve_model_api_key(None, tmp_path / "empty", env)
    with pytest.raises(UsageError, match="cannot read"):
        resolve_model_api_key(None, tmp_path / "missing", env)
    monkeypatch.setenv(MODEL_API_KEY_ENV, "from-env-123")
    assert MODEL_API_KEY_ENV not in child_environ() and child_environ(A="1")["A"] == "1"


def test_an_environment_value_under_a_secret_mapping_is_masked_once(
    write: WriteFile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RG_TEST_NESTED", "nested-9c2e5b1d")
    write(
        "c.yaml",
        "client_secret:\n  inner: ${oc.env:RG_TEST_NESTED}\nlisted: [a, '${oc.env:RG_TEST_NESTED}']\n",
    )
    shown = load_config(["c.yaml"], cwd=tmp_path, env_yaml=False).redacted()
    assert shown["client_secret"] == "***" and shown["listed"] == ["a", "***"]


def test_session_secret_is_not_held_to_the_header_rule(write: WriteFile, tmp_path: Path) -> None:
    write("c.yaml", 'session_secret: "line one\\nline two"\nauth_token: tok-123456\n')
    assert load_config(["c.yaml"], cwd=tmp_path, env_yaml=False).get("auth_token") == "tok-123456"
