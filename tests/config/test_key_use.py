"""Every top-level setting rewardgym accepts is either read by the module that says so, or refused."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from rewardgym.config import load_config
from rewardgym.config.key_use import NOT_SUPPORTED, READ_BY
from rewardgym.config.known_keys import KNOWN_SETTINGS
from rewardgym.errors import ConfigError
from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "src" / "rewardgym"


def test_every_accepted_setting_is_read_or_refused_and_nothing_else_is_listed() -> None:
    assert not set(READ_BY) & set(NOT_SUPPORTED)
    assert set(READ_BY) | set(NOT_SUPPORTED) == set(KNOWN_SETTINGS)


@cache
def _string_constants(module: Path) -> frozenset[str]:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return frozenset(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    )


@pytest.mark.parametrize("key", sorted(READ_BY))
def test_each_read_setting_is_named_in_code_by_its_reader(key: str) -> None:
    # The key as a string in the reader's code (not in a docstring): the module looks it up.
    module = PACKAGE / READ_BY[key]
    assert key in _string_constants(module), f"{READ_BY[key]} does not read {key!r}"


@pytest.mark.parametrize("key", sorted(NOT_SUPPORTED))
def test_each_refused_setting_is_refused_with_one_line_naming_it(key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config([], [f"++{key}=1"], require_complete=False, check_keys=True)
    message = str(caught.value)
    assert message.startswith(f"{key!r} is not supported by rewardgym: ")
    assert "\n" not in message and f"from the override ++{key}=" in message


def test_a_refused_setting_is_refused_even_when_unknown_keys_are_allowed() -> None:
    with pytest.raises(ConfigError, match="'skills' is not supported"):
        load_config(
            [], ["++skills=[a]", "++allow_unknown_keys=true"], require_complete=False, check_keys=True
        )


def test_a_refused_setting_set_to_what_asks_for_nothing_loads(tmp_path: Path) -> None:
    overrides = [
        "++observability_enabled=false",
        "++model_call_capture_dir=null",
        "++python_version=null",
        "++error_on_almost_servers=true",
    ]
    load_config([], overrides, require_complete=False, check_keys=True)
    with pytest.raises(ConfigError, match="'error_on_almost_servers' is not supported"):
        load_config([], ["++error_on_almost_servers=false"], require_complete=False, check_keys=True)


def test_a_refused_setting_in_a_file_names_the_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("num_repeats: 2\nallow_unsupported_pairing: true\n")
    with pytest.raises(ConfigError, match=rf"'allow_unsupported_pairing' is not supported .*{config}:2\)"):
        load_config([config], [], require_complete=False, check_keys=True)


def test_env_yaml_may_hold_a_refused_key_for_other_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "env.yaml").write_text("hf_token: hf_abcdefgh\n")
    monkeypatch.chdir(tmp_path)
    load_config([], [], require_complete=False, check_keys=True)
