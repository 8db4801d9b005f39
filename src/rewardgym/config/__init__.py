"""Configuration: YAML files, env.yaml, CLI overrides, the server-instance graph and secret redaction.

Public API (see ``docs/config.md`` for the user-facing rules)::

    cfg = load_config(config_paths, overrides, cwd=..., search_dirs=..., env_yaml=True, require_complete=True)
    cfg.instances            # {name: ServerInstance}, in config order
    cfg.head_server          # (host, port)
    cfg.get("num_repeats")   # resolved value at a dotted path
    cfg.to_dict()            # resolved plain dict, secrets included (for child servers only)
    cfg.redacted()           # same, secrets masked (for printing, logging, serving, fingerprints)

Every function raises :class:`~rewardgym.errors.ConfigError` for any problem in the user's config.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rewardgym.config.assets import ASSET_KINDS, AssetKind, available_assets, resolve_asset
    from rewardgym.config.flags import (
        POLICY_FLAG_KEYS,
        cli_overrides_from_flags,
        literal_override,
        load_config_from_flags,
        selector_config_paths,
    )
    from rewardgym.config.instances import (
        KIND_LABELS,
        RESERVED_KEYS,
        SERVER_KINDS,
        ServerInstance,
        ServerKind,
    )
    from rewardgym.config.loader import GymConfig, config_from_dict, load_config
    from rewardgym.config.overrides import Override, parse_override
    from rewardgym.config.ports import DEFAULT_HEAD_PORT, DEFAULT_HOST, can_bind, pick_free_port
    from rewardgym.config.secrets import (
        MASK,
        is_secret_key,
        redact,
        redact_text,
        register_secret,
        register_secrets_in,
    )

# Names are imported from their submodule on first access (PEP 562), so that importing a light submodule
# such as ``rewardgym.config.secrets`` (every server process does) does not load OmegaConf and the loader.
_SUBMODULE_OF = {
    "ASSET_KINDS": "assets",
    "AssetKind": "assets",
    "available_assets": "assets",
    "resolve_asset": "assets",
    "POLICY_FLAG_KEYS": "flags",
    "cli_overrides_from_flags": "flags",
    "literal_override": "flags",
    "load_config_from_flags": "flags",
    "selector_config_paths": "flags",
    "KIND_LABELS": "instances",
    "RESERVED_KEYS": "instances",
    "SERVER_KINDS": "instances",
    "ServerInstance": "instances",
    "ServerKind": "instances",
    "GymConfig": "loader",
    "config_from_dict": "loader",
    "load_config": "loader",
    "Override": "overrides",
    "parse_override": "overrides",
    "DEFAULT_HEAD_PORT": "ports",
    "DEFAULT_HOST": "ports",
    "can_bind": "ports",
    "pick_free_port": "ports",
    "MASK": "secrets",
    "is_secret_key": "secrets",
    "redact": "secrets",
    "redact_text": "secrets",
    "register_secret": "secrets",
    "register_secrets_in": "secrets",
}


def __getattr__(name: str) -> Any:
    submodule = _SUBMODULE_OF.get(name)
    if submodule is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{submodule}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_SUBMODULE_OF])


__all__ = [
    "ASSET_KINDS",
    "DEFAULT_HEAD_PORT",
    "DEFAULT_HOST",
    "KIND_LABELS",
    "MASK",
    "POLICY_FLAG_KEYS",
    "RESERVED_KEYS",
    "SERVER_KINDS",
    "AssetKind",
    "GymConfig",
    "Override",
    "ServerInstance",
    "ServerKind",
    "available_assets",
    "can_bind",
    "cli_overrides_from_flags",
    "config_from_dict",
    "is_secret_key",
    "literal_override",
    "load_config",
    "load_config_from_flags",
    "parse_override",
    "pick_free_port",
    "redact",
    "redact_text",
    "register_secret",
    "register_secrets_in",
    "resolve_asset",
    "selector_config_paths",
]
