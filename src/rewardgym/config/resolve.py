"""Turning the merged OmegaConf tree into plain, fully interpolated Python data.

Contract:

* :func:`materialize` walks the config and returns plain dicts/lists with every ``${…}`` resolved (OmegaConf
  semantics, root-relative; ``${oc.env:VAR,default}`` supported) plus the dotted path of every value still
  ``???``.
* An interpolation that cannot be resolved is a :class:`~rewardgym.errors.ConfigError` naming the key that
  holds it and hinting ``++<missing key>=<value>`` (or how to set the environment variable). Interpolations
  of unset keys are all reported in one error (one line each).
* With ``require_complete=False``, ``???`` values are returned as the string ``"???"`` and an interpolation
  that points at a ``???`` value is returned unresolved (as written), instead of failing.
* :func:`missing_values_error` builds the single error that lists every ``???`` path.
* ``env_reads``: when given a list, :func:`materialize` appends ``(dotted path, value)`` for every value an
  ``${oc.env:VAR}`` read from the environment while resolving (a default used because ``VAR`` is unset is
  not an environment value). The path is the key that holds the interpolation, even when another key
  reaches it through ``${…}``. The loader masks these values as secrets unless the key is known-safe.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from omegaconf import DictConfig, ListConfig, Node, OmegaConf
from omegaconf.errors import (
    InterpolationKeyError,
    InterpolationToMissingValueError,
    MissingMandatoryValue,
    OmegaConfBaseException,
)

from rewardgym.config.oc_errors import omegaconf_message
from rewardgym.errors import ConfigError

MISSING = "???"
_KEY_NOT_FOUND = re.compile(r"Interpolation key '([^']+)' not found")
# The command-line flags that set the policy keys (rewardgym.config.flags), named in the hint.
_POLICY_FLAGS = {
    "policy_base_url": "--model-url",
    "policy_api_key": "--model-api-key",
    "policy_model_name": "--model",
}
_ENV_NOT_FOUND = re.compile(r"Environment variable '([^']+)' not found")


_ENV_READS: ContextVar[list[tuple[str, str]] | None] = ContextVar("rewardgym_env_reads", default=None)
_NO_DEFAULT: Any = object()


def _node_path(node: Node) -> str:
    parts: list[str] = []
    current: Node | None = node
    while current is not None and current._get_parent() is not None:
        parts.append(str(current._key()))
        current = current._get_parent()
    return ".".join(reversed(parts))


def _env(key: str, default: Any = _NO_DEFAULT, *, _node_: Node) -> str | None:
    """``oc.env`` exactly as OmegaConf has it, plus a record of what came from the environment."""
    value = os.environ.get(key)
    if value is None:
        if default is _NO_DEFAULT:
            raise KeyError(f"Environment variable '{key}' not found")
        return str(default) if default is not None else None
    reads = _ENV_READS.get()
    if reads is not None:
        reads.append((_node_path(_node_), value))
    return value


OmegaConf.register_new_resolver("oc.env", _env, replace=True)


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _raw(container: DictConfig | ListConfig, key: Any) -> Any:
    return OmegaConf.to_container(container, resolve=False)[key]  # type: ignore[index]


def _interpolation_error(path: str, raw: Any, exc: OmegaConfBaseException) -> ConfigError:
    msg = omegaconf_message(exc)
    written = f" ({raw})" if isinstance(raw, str) else ""
    if isinstance(exc, InterpolationKeyError) and (found := _KEY_NOT_FOUND.search(msg)):
        missing = found.group(1)
        flag = _POLICY_FLAGS.get(missing)
        where = f"or {flag}, or in env.yaml" if flag else "or in env.yaml"
        return ConfigError(
            f"{path}: cannot resolve interpolation{written}: key {missing!r} is not set; "
            f"set it, e.g. ++{missing}=<value> ({where})"
        )
    if found := _ENV_NOT_FOUND.search(msg):
        var = found.group(1)
        return ConfigError(
            f"{path}: cannot resolve interpolation{written}: environment variable {var} is not set; "
            f"export it, give a default (${{oc.env:{var},<default>}}), or set ++{path}=<value>"
        )
    return ConfigError(f"{path}: cannot resolve interpolation{written}: {msg}; set ++{path}=<value>")


def materialize(
    cfg: DictConfig, *, require_complete: bool = True, env_reads: list[tuple[str, str]] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Resolve ``cfg`` into plain data; returns (data, dotted paths of ``???`` values)."""
    token = _ENV_READS.set(env_reads)
    try:
        return _materialize(cfg, require_complete=require_complete)
    finally:
        _ENV_READS.reset(token)


def _materialize(cfg: DictConfig, *, require_complete: bool) -> tuple[dict[str, Any], list[str]]:
    missing: list[str] = []

    def value_at(container: DictConfig | ListConfig, key: Any, path: str) -> Any:
        if OmegaConf.is_missing(container, key):
            missing.append(path)
            return MISSING
        try:
            value = container[key]
        except (InterpolationToMissingValueError, MissingMandatoryValue):
            # The ``???`` it points at is reported under its own path.
            return _raw(container, key)
        except InterpolationKeyError as exc:
            # An unset key (typically policy_base_url / policy_api_key / policy_model_name): collect them
            # all, so the user fixes every one in one go instead of one per run.
            unset.append(_interpolation_error(path, _raw(container, key), exc))
            return _raw(container, key)
        except OmegaConfBaseException as exc:
            raise _interpolation_error(path, _raw(container, key), exc) from None
        if isinstance(value, DictConfig | ListConfig):
            return visit(value, path)
        return value

    def visit(node: DictConfig | ListConfig, path: str) -> Any:
        if isinstance(node, ListConfig):
            return [value_at(node, i, _join(path, i)) for i in range(len(node))]
        return {key: value_at(node, key, _join(path, key)) for key in node}

    unset: list[ConfigError] = []
    data = visit(cfg, "")
    if len(unset) == 1:
        raise unset[0]
    if unset:
        lines = "\n".join(f"  {error}" for error in unset)
        raise ConfigError(f"{len(unset)} interpolations cannot be resolved:\n{lines}")
    if missing and require_complete:
        raise missing_values_error(missing)
    return data, missing


def missing_values_error(paths: Sequence[str]) -> ConfigError:
    """One error listing every ``???`` value with a ``++path=<value>`` hint for each."""
    lines = "\n".join(f"  ++{path}=<value>" for path in paths)
    noun = "value is" if len(paths) == 1 else "values are"
    return ConfigError(
        f"{len(paths)} required config {noun} missing (???); set them on the command line, "
        f"in env.yaml or in a config file:\n{lines}"
    )
