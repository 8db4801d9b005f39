"""Properties of the command-line override parser (:mod:`rewardgym.config.overrides`).

- Typed values (null, booleans in every accepted spelling, ints, floats, quoted and plain strings, lists,
  mappings) written as a ``+key=value`` / ``++key=value`` token parse back to exactly the same value and
  type, and land unchanged at the dotted key of a loaded config.
- Any token parses to an :class:`Override` or raises :class:`ConfigError` — never another exception.
- A run of ``++key=…`` overrides leaves the last value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rewardgym.config import load_config, parse_override
from rewardgym.config.overrides import Override
from rewardgym.errors import ConfigError

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LOAD_SETTINGS = settings(SETTINGS, max_examples=60, suppress_health_check=list(HealthCheck))

NAME = st.from_regex(r"\A[A-Za-z_][A-Za-z0-9_\-]{0,8}\Z")
KEYS = st.lists(NAME, min_size=1, max_size=3).map(".".join)
# Characters YAML accepts in a document (PyYAML's reader rejects the rest), minus '$' and '\' so that a
# loaded config does not read a value as an interpolation or an escape.
YAML_TEXT = st.text(
    alphabet=st.characters(
        blacklist_categories=["Cs", "Cc", "Co", "Cn", "Zl", "Zp"], blacklist_characters="$\\\ufeff"
    )
    | st.sampled_from(["\n", "\t", " "]),
    max_size=16,
)
NULL_WORDS = {"null", "Null", "NULL", "true", "false"}
PLAIN = st.from_regex(r"\A[a-z][a-z0-9_\-./]{0,12}(:[0-9]{1,4}(/[a-z0-9]{1,4})?)?\Z").filter(
    lambda s: s.lower() not in {w.lower() for w in NULL_WORDS}
)


@st.composite
def scalar_tokens(draw: st.DrawFn) -> tuple[str, Any]:
    """(text as written on the command line, the typed value it must parse to)."""
    kind = draw(st.sampled_from(["null", "bool", "int", "float", "quoted", "plain"]))
    if kind == "null":
        return "null", None
    if kind == "bool":
        value = draw(st.booleans())
        spelling = draw(st.sampled_from([str.lower, str.capitalize, str.upper]))
        return spelling(str(value)), value
    if kind == "int":
        number = draw(st.integers(min_value=-(10**12), max_value=10**12))
        return str(number), number
    if kind == "float":
        real = draw(st.floats(allow_nan=False, allow_infinity=False, width=64))
        return repr(real), real
    if kind == "quoted":
        text = draw(YAML_TEXT)
        return json.dumps(text, ensure_ascii=False), text
    word = draw(PLAIN)
    return word, word


@st.composite
def value_tokens(draw: st.DrawFn) -> tuple[str, Any]:
    """Scalars, flat lists and flat mappings (list/mapping members: non-plain scalars)."""
    shape = draw(st.sampled_from(["scalar", "scalar", "list", "dict"]))
    if shape == "scalar":
        return draw(scalar_tokens())
    members = scalar_tokens().filter(lambda tv: not (isinstance(tv[1], str) and not tv[0].startswith('"')))
    if shape == "list":
        items = draw(st.lists(members, max_size=4))
        return "[" + ", ".join(t for t, _ in items) + "]", [v for _, v in items]
    entries = draw(st.dictionaries(NAME, members, max_size=4))
    text = "{" + ", ".join(f"{k}: {t}" for k, (t, _) in entries.items()) + "}"
    return text, {k: v for k, (_, v) in entries.items()}


def typed(value: Any) -> Any:
    """``value`` with every leaf tagged by its exact type (so 1 ≠ 1.0 ≠ True, and -0.0 ≠ 0.0)."""
    if isinstance(value, dict):
        return {"dict": {k: typed(v) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return {"list": [typed(v) for v in value]}
    if isinstance(value, float):
        return ("float", value.hex())
    return (type(value).__name__, value)


@SETTINGS
@given(st.sampled_from(["+", "++"]), KEYS, value_tokens())
def test_typed_values_round_trip_through_a_token(mode: str, key: str, case: tuple[str, Any]) -> None:
    text, value = case
    override = parse_override(f"{mode}{key}={text}")
    assert override.mode == ("add" if mode == "+" else "set")
    assert override.key == key
    assert typed(override.value) == typed(value), text


@LOAD_SETTINGS
@given(KEYS, value_tokens())
def test_a_parsed_value_lands_unchanged_in_the_config(
    tmp_path_factory: Any, key: str, case: tuple[str, Any]
) -> None:
    text, value = case
    assume(not key.startswith("_"))  # leading-underscore keys are block directives
    cwd: Path = tmp_path_factory.mktemp("cfg")
    cfg = load_config([], [f"++{key}={text}"], cwd=cwd, env_yaml=False)
    assert typed(cfg.get(key)) == typed(value), text


@SETTINGS
@given(st.text(max_size=40))
def test_any_token_is_an_override_or_a_config_error(token: str) -> None:
    try:
        override = parse_override(token)
    except ConfigError as exc:
        assert str(exc)  # a message, not an empty error
    else:
        assert isinstance(override, Override)
        assert token.startswith("+") and "=" in token
        assert override.token == token


@SETTINGS
@given(KEYS, st.lists(st.integers(), min_size=1, max_size=5))
def test_the_last_replacement_wins(tmp_path_factory: Any, key: str, values: list[int]) -> None:
    assume(not key.startswith("_"))
    cwd: Path = tmp_path_factory.mktemp("cfg")
    cfg = load_config([], [f"++{key}={v}" for v in values], cwd=cwd, env_yaml=False)
    assert cfg.get(key) == values[-1]
