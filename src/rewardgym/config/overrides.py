"""Command-line config overrides: ``+key=value`` (add) and ``++key=value`` (add or replace).

Contract:

* :func:`parse_override` turns one token into an :class:`Override` (mode, dotted key, typed value). Values
  are typed like Hydra does: ``int``, ``float``, ``true``/``false`` (only those spellings), ``null``, lists
  ``[a,b]``, dicts ``{a: 8, _default: 1}``, quoted strings; anything else is a string. ``${…}`` is kept for
  OmegaConf to interpolate later. An empty value is the empty string.
* A plain ``key=value``, a token without ``=``, an empty or malformed key, or a value that does not parse
  (``++a=[1,2``) is a :class:`~rewardgym.errors.ConfigError` naming the token.
* :func:`apply_overrides` applies overrides in order to an OmegaConf container. ``+key`` fails when the key
  already holds a value (a ``???`` placeholder counts as absent); ``++key`` always sets. Dict values merge
  into an existing dict, every other value replaces.

Values of secret keys are registered for redaction as soon as they are parsed, so no later message leaks
them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from rewardgym.config.oc_errors import omegaconf_message
from rewardgym.config.secrets import is_secret_key, redact_text, register_secret
from rewardgym.errors import ConfigError
from rewardgym.io.yaml_bounds import CONFIG_MAX_NODES, load_bounded

_KEY_RE = re.compile(r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*$")
_BOOL_RE = re.compile(r"^(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$")
_BOOL_TAG = "tag:yaml.org,2002:bool"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


class _ValueLoader(yaml.SafeLoader):
    """SafeLoader typed like Hydra's override grammar: only true/false are booleans, no timestamps."""


_ValueLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL_TAG, _TIMESTAMP_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_ValueLoader.add_implicit_resolver(_BOOL_TAG, _BOOL_RE, list("tTfF"))
# YAML 1.1 misses floats such as 1e3 without a dot; accept them like Hydra does.
_ValueLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)[eE][-+]?\d+$"),
    list("-+0123456789."),
)


@dataclass(frozen=True)
class Override:
    """One parsed ``+key=value`` / ``++key=value`` token."""

    mode: Literal["add", "set"]
    """``add`` for ``+key`` (the key must not exist yet), ``set`` for ``++key`` (add or replace)."""
    key: str
    """Dotted path, e.g. ``mcqa.resources_servers.mcqa.grading_mode``."""
    value: Any
    """The typed value (str, int, float, bool, None, list or dict)."""
    token: str
    """The original token, for error messages (secret values are masked when shown)."""


def parse_value(text: str) -> Any:
    """Type an override value; raises ``yaml.YAMLError`` when it does not parse."""
    if text == "":
        return ""
    if "#" in text and text[0] not in "'\"[{":
        return text  # YAML would read '#…' as a comment and drop it
    # Bounded: an alias bomb in a value is refused, not expanded.
    return load_bounded(text, _ValueLoader, max_nodes=CONFIG_MAX_NODES)


def parse_override(token: str) -> Override:
    """Parse one ``+key=value`` / ``++key=value`` token (see the module docstring)."""
    if token.startswith("++"):
        mode: Literal["add", "set"] = "set"
        body = token[2:]
    elif token.startswith("+"):
        mode = "add"
        body = token[1:]
    else:
        raise ConfigError(
            f"override {redact_text(token)!r} must be written +key=value (add a new key) "
            "or ++key=value (add or replace)"
        )
    key, sep, raw = body.partition("=")
    key = key.strip()
    if is_secret_key(key.rsplit(".", 1)[-1]):
        register_secret(raw)
    shown = redact_text(token)
    if not sep:
        raise ConfigError(f"override {shown!r} has no '=': write {token[: len(token) - len(body)]}key=value")
    if not _KEY_RE.match(key):
        raise ConfigError(
            f"override {shown!r}: {key!r} is not a valid key (dotted names of letters, digits, _ and -)"
        )
    try:
        value = parse_value(raw)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(
            f"override {shown!r}: cannot parse the value ({problem}); quote it to pass a plain string, "
            f"e.g. {token[: len(token) - len(body)]}{key}='...'"
        ) from None
    return Override(mode=mode, key=key, value=value, token=token)


def parse_overrides(tokens: Sequence[str]) -> list[Override]:
    """Parse every token, in order."""
    return [parse_override(token) for token in tokens]


def _has_value(container: Any, key: str) -> bool:
    node: Any = container
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return bool(node != "???")


def apply_overrides(cfg: DictConfig, overrides: Sequence[Override]) -> None:
    """Apply ``overrides`` to ``cfg`` in place, in order (see the module docstring)."""
    for override in overrides:
        if override.mode == "add" and _has_value(OmegaConf.to_container(cfg, resolve=False), override.key):
            raise ConfigError(
                f"override {redact_text(override.token)!r}: {override.key!r} is already set; "
                f"use ++{override.token.lstrip('+')} to replace it"
            )
        try:
            OmegaConf.update(cfg, override.key, override.value, merge=True, force_add=True)
        except OmegaConfBaseException as exc:
            msg = omegaconf_message(exc)
            raise ConfigError(f"override {redact_text(override.token)!r}: {msg}") from None
