"""+key=value / ++key=value: typed values, dotted paths, add vs replace, and every malformed token."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rewardgym.config import load_config, parse_override
from rewardgym.errors import ConfigError
from tests.config.conftest import WriteFile


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("++a=5", 5),
        ("++a=-3", -3),
        ("++a=1.5", 1.5),
        ("++a=1e3", 1000.0),
        ("++a=true", True),
        ("++a=False", False),
        ("++a=yes", "yes"),
        ("++a=null", None),
        ("++a=[a,b]", ["a", "b"]),
        ("++a=[1, 2.5, null]", [1, 2.5, None]),
        ("++a={simple_agent: 32, _default: 1}", {"simple_agent": 32, "_default": 1}),
        ("++a='5'", "5"),
        ('++a="true"', "true"),
        ("++a=", ""),
        ("++a=http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("++a=2024-01-01", "2024-01-01"),
        ("++a=b=c", "b=c"),
        ("++a=#fff", "#fff"),
        ("++a=x #y", "x #y"),
        ("++a=${other}", "${other}"),
    ],
)
def test_values_are_typed(token: str, expected: Any) -> None:
    override = parse_override(token)
    assert override.value == expected
    assert type(override.value) is type(expected)


def test_modes_and_dotted_keys() -> None:
    add = parse_override("+x.y.z=1")
    assert (add.mode, add.key, add.value) == ("add", "x.y.z", 1)
    replace = parse_override("++mcqa.resources_servers.mcqa.grading_mode=lenient_boxed")
    assert (replace.mode, replace.key, replace.value) == (
        "set",
        "mcqa.resources_servers.mcqa.grading_mode",
        "lenient_boxed",
    )


@pytest.mark.parametrize(
    ("token", "fragment"),
    [
        ("a=1", "+key=value"),
        ("++a", "no '='"),
        ("++=1", "not a valid key"),
        ("++a b=1", "not a valid key"),
        ("++a..b=1", "not a valid key"),
        ("++a=[1,2", "cannot parse the value"),
        ("++a={x: 1", "cannot parse the value"),
    ],
)
def test_malformed_tokens_name_the_token(token: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_override(token)
    assert fragment in str(err.value)
    assert repr(token) in str(err.value)


def test_unparsable_secret_value_is_not_echoed() -> None:
    with pytest.raises(ConfigError) as err:
        parse_override("++policy_api_key=[sk-LEAKYVALUE999")
    assert "LEAKYVALUE999" not in str(err.value)


def test_apply_dotted_add_replace_and_merge(tmp_path: Path, write: WriteFile) -> None:
    write("base.yaml", "a: {b: 1, c: 2}\nlst: [1, 2]\nkeep: 1\n")
    cfg = load_config(
        ["base.yaml"],
        ["++a.b=10", "+a.d.e=x", "++lst=[3]", "++a={f: true}", "+new=[1,2]"],
        cwd=tmp_path,
    )
    assert cfg.get("a") == {"b": 10, "c": 2, "d": {"e": "x"}, "f": True}
    assert cfg.get("lst") == [3]
    assert cfg.get("new") == [1, 2]
    assert cfg.get("keep") == 1


def test_plus_on_existing_key_fails_with_hint(tmp_path: Path, write: WriteFile) -> None:
    write("base.yaml", "a: {b: 1}\n")
    with pytest.raises(ConfigError) as err:
        load_config(["base.yaml"], ["+a.b=2"], cwd=tmp_path)
    assert "'a.b' is already set" in str(err.value)
    assert "++a.b=2" in str(err.value)


def test_plus_twice_on_the_same_key_fails(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="already set"):
        load_config([], ["+k=1", "+k=2"], cwd=tmp_path)


def test_plus_on_existing_null_fails_but_plus_fills_a_missing_value(tmp_path: Path, write: WriteFile) -> None:
    write("base.yaml", "nothing: null\nneeded: ???\n")
    with pytest.raises(ConfigError, match="already set"):
        load_config(["base.yaml"], ["+nothing=1", "+needed=2"], cwd=tmp_path)
    cfg = load_config(["base.yaml"], ["+needed=2"], cwd=tmp_path)
    assert cfg.get("needed") == 2
    assert cfg.get("nothing") is None


def test_later_override_wins(tmp_path: Path) -> None:
    cfg = load_config([], ["++k=1", "++k=2"], cwd=tmp_path)
    assert cfg.get("k") == 2


def test_override_value_can_interpolate(tmp_path: Path) -> None:
    cfg = load_config([], ["++a=7", "++b=${a}", "++c=x-${a}"], cwd=tmp_path)
    assert (cfg.get("b"), cfg.get("c")) == (7, "x-7")
