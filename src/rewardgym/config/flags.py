"""Translating the common command-line flags into config inputs, shared by every command that loads config.

Contract:

* :func:`cli_overrides_from_flags` maps ``--model/-m``, ``--model-url`` and ``--model-api-key`` to
  ``++policy_model_name`` / ``++policy_base_url`` / ``++policy_api_key`` tokens whose values are taken
  literally (quoted, ``${`` escaped), so a flag replaces the value from env.yaml or a config file. The API
  key is registered as a secret at once.
* :func:`selector_config_paths` resolves the asset selectors to config files: model types first, then
  resources servers, then agents (see :func:`~rewardgym.config.assets.resolve_asset`).
* :func:`load_config_from_flags` is :func:`~rewardgym.config.loader.load_config` with all of the above:
  selector files come before ``--config`` files (so your own files win), flag overrides before the
  ``+k=v`` / ``++k=v`` tokens (so an explicit ``++`` token wins).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from rewardgym.config.assets import resolve_asset
from rewardgym.config.loader import GymConfig, load_config
from rewardgym.config.secrets import register_secret

POLICY_FLAG_KEYS: Final = {
    "model": "policy_model_name",
    "model_url": "policy_base_url",
    "model_api_key": "policy_api_key",
}
"""Flag (Python parameter name) → top-level config key."""


def literal_override(key: str, value: str) -> str:
    """A ``++key=value`` token whose value is the string ``value`` exactly (no typing, no interpolation)."""
    escaped = value.replace("${", "\\${")
    return f"++{key}={json.dumps(escaped, ensure_ascii=False)}"


def cli_overrides_from_flags(
    *, model: str | None = None, model_url: str | None = None, model_api_key: str | None = None
) -> list[str]:
    """Override tokens for the policy-model flags that were given (``None`` means not given)."""
    if model_api_key:
        register_secret(model_api_key)
    given = {"model": model, "model_url": model_url, "model_api_key": model_api_key}
    return [
        literal_override(POLICY_FLAG_KEYS[flag], value) for flag, value in given.items() if value is not None
    ]


def selector_config_paths(
    *,
    resources_servers: Sequence[str] = (),
    model_types: Sequence[str] = (),
    agents: Sequence[str] = (),
    search_dirs: Sequence[Path] = (),
    cwd: Path | None = None,
) -> list[Path]:
    """Config files selected by ``--model-type``, ``--resources-server`` and ``--agent``, in that order."""
    paths = [resolve_asset("model_type", name, search_dirs, cwd=cwd) for name in model_types]
    paths += [resolve_asset("resources_server", name, search_dirs, cwd=cwd) for name in resources_servers]
    paths += [resolve_asset("agent", name, search_dirs, cwd=cwd) for name in agents]
    return paths


def load_config_from_flags(
    *,
    config_paths: Sequence[str | Path] = (),
    resources_servers: Sequence[str] = (),
    model_types: Sequence[str] = (),
    agents: Sequence[str] = (),
    search_dirs: Sequence[Path] = (),
    model: str | None = None,
    model_url: str | None = None,
    model_api_key: str | None = None,
    overrides: Sequence[str] = (),
    cwd: Path | None = None,
    env_yaml: bool = True,
    require_complete: bool = True,
) -> GymConfig:
    """Load the config the way every ``gym`` command does from its flags (see the module docstring)."""
    selected = selector_config_paths(
        resources_servers=resources_servers,
        model_types=model_types,
        agents=agents,
        search_dirs=search_dirs,
        cwd=cwd,
    )
    flag_tokens = cli_overrides_from_flags(model=model, model_url=model_url, model_api_key=model_api_key)
    return load_config(
        [*selected, *config_paths],
        [*flag_tokens, *overrides],
        cwd=cwd,
        search_dirs=search_dirs,
        env_yaml=env_yaml,
        require_complete=require_complete,
    )
