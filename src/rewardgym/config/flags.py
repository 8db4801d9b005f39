"""Translating the common command-line flags into config inputs, shared by every command that loads config.

Contract:

* :func:`cli_overrides_from_flags` maps ``--model/-m``, ``--model-url`` and the API key to
  ``++policy_model_name`` / ``++policy_base_url`` / ``++policy_api_key`` tokens whose values are taken
  literally (quoted, ``${`` escaped), so a flag replaces the value from env.yaml or a config file. The API
  key is registered as a secret at once.
* ``resolve_model_api_key`` says where the API key comes from, first found: ``--model-api-key K`` (visible to
  every user of the machine in ``ps``: the help says so), ``--model-api-key-file F`` (the file's first line;
  keep it ``0600``, or use ``<(…)``), the ``REWARDGYM_MODEL_API_KEY`` environment variable; else none (then
  ``policy_api_key`` of env.yaml or a config file applies). Neither the file nor the variable puts the key on
  any command line.
* :func:`selector_config_paths` resolves the asset selectors to config files: model types first, then
  resources servers, then agents (see :func:`~rewardgym.config.assets.resolve_asset`).
* :func:`load_config_from_flags` is :func:`~rewardgym.config.loader.load_config` with all of the above:
  selector files come before ``--config`` files (so your own files win), flag overrides before the
  ``+k=v`` / ``++k=v`` tokens (so an explicit ``++`` token wins).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from rewardgym.config.assets import resolve_asset
from rewardgym.config.loader import GymConfig, load_config
from rewardgym.config.secrets import register_secret
from rewardgym.errors import UsageError

POLICY_FLAG_KEYS: Final = {
    "model": "policy_model_name",
    "model_url": "policy_base_url",
    "model_api_key": "policy_api_key",
}
"""Flag (Python parameter name) → top-level config key."""


MODEL_API_KEY_ENV: Final = "REWARDGYM_MODEL_API_KEY"
"""Environment variable holding the policy API key (the non-argv alternative to ``--model-api-key``)."""


def resolve_model_api_key(
    flag: str | None, key_file: Path | None, environ: Mapping[str, str] | None = None
) -> str | None:
    """The policy API key from the flag, the key file or the environment (module docstring), or ``None``."""
    if flag is not None and key_file is not None:
        raise UsageError("give either --model-api-key or --model-api-key-file, not both")
    if flag is not None:
        return flag
    if key_file is not None:
        try:
            text = key_file.expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise UsageError(f"--model-api-key-file {key_file}: cannot read it ({reason})") from None
        key = text.splitlines()[0].strip() if text.strip() else ""
        if not key:
            raise UsageError(f"--model-api-key-file {key_file}: the file is empty (the key is its 1st line)")
        return key
    value = (os.environ if environ is None else environ).get(MODEL_API_KEY_ENV)
    return value if value else None


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
    model_api_key_file: Path | None = None,
    overrides: Sequence[str] = (),
    cwd: Path | None = None,
    env_yaml: bool = True,
    require_complete: bool = True,
    check_keys: bool = False,
) -> GymConfig:
    """Load the config the way every ``gym`` command does from its flags (see the module docstring); the API
    key comes from ``model_api_key``, ``model_api_key_file`` or ``$REWARDGYM_MODEL_API_KEY``."""
    selected = selector_config_paths(
        resources_servers=resources_servers,
        model_types=model_types,
        agents=agents,
        search_dirs=search_dirs,
        cwd=cwd,
    )
    key = resolve_model_api_key(model_api_key, model_api_key_file)
    flag_tokens = cli_overrides_from_flags(model=model, model_url=model_url, model_api_key=key)
    return load_config(
        [*selected, *config_paths],
        [*flag_tokens, *overrides],
        cwd=cwd,
        search_dirs=search_dirs,
        env_yaml=env_yaml,
        require_complete=require_complete,
        check_keys=check_keys,
    )
