"""From a loaded :class:`~rewardgym.config.GymConfig` to what the supervisor launches.

Contract:
- :func:`child_specs`: one :class:`~rewardgym.launch.child_spec.ChildSpec` per server instance, in config
  order. Each config is the instance's resolved fields plus ``name``, ``host``, ``port``, ``peers`` (every
  other instance's URL) and the run-wide defaults the instance does not set itself: ``log_dir``,
  ``log_level``, ``auth_token``; and every secret value registered in this process (``secrets``, so the
  child masks what the supervisor masks). Nothing is imported: building specs is cheap, so children can be
  spawned at once.
- :func:`validate_specs`: finds each class (:func:`rewardgym.registry.lookup`: a built-in name or
  ``module.path:Class``; it must be a :class:`~rewardgym.servers.base.BaseServer`) and validates each config,
  raising one :class:`ConfigError` naming ``<instance>.<field>``. The supervisor runs it while the children
  boot and stops them all if it fails.
- :func:`upstream_urls`: every value of a key ending in ``base_url`` (string or list of strings) of the model
  server instances — the endpoints ``gym env start`` waits for (NeMo Gym's readiness rule).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rewardgym.config import GymConfig
from rewardgym.config.secrets import registered_secrets
from rewardgym.errors import ConfigError
from rewardgym.launch.child_spec import ChildSpec, server_class

RUN_DEFAULTS = ("log_level", "auth_token")


def child_specs(cfg: GymConfig, *, log_dir: Path) -> list[ChildSpec]:
    """The launch specs of every instance of ``cfg`` (see the module docstring)."""
    instances = cfg.instances
    if not instances:
        raise ConfigError("the config defines no server instances (use --config, --resources-server, …)")
    peers = {name: inst.url for name, inst in instances.items()}
    secrets = sorted(registered_secrets())
    specs = []
    for inst in instances.values():
        config: dict[str, Any] = {**inst.fields, "name": inst.name, "host": inst.host, "port": inst.port}
        config.pop("entrypoint", None)
        config["peers"] = {k: v for k, v in peers.items() if k != inst.name}
        config.setdefault("log_dir", str(log_dir))
        for key in RUN_DEFAULTS:
            value = cfg.get(key)
            if value not in (None, "") and key not in config:
                config[key] = value
        specs.append(
            ChildSpec(
                name=inst.name,
                kind=inst.kind,
                implementation=inst.implementation,
                config=config,
                secrets=secrets,
            )
        )
    return specs


def validate_specs(specs: list[ChildSpec], cfg: GymConfig | None = None) -> None:
    """Resolve every class and validate every config (see the module docstring); with ``cfg``, each invalid
    field's line says where it was set (``(from the override ++…=…)``, ``(from file:line)``)."""
    for spec in specs:
        try:
            server_class(spec.kind, spec.implementation).load_config(spec.config)
        except ConfigError as exc:
            message = str(exc) if cfg is None else _with_origins(str(exc), spec, cfg)
            raise ConfigError(message if spec.name in message else f"{spec.name}: {message}") from None


def _with_origins(message: str, spec: ChildSpec, cfg: GymConfig) -> str:
    lines = message.split("\n")
    prefix = f"  {spec.name}."
    for index, line in enumerate(lines):
        field, sep, _ = line.removeprefix(prefix).partition(": ")
        if line.startswith(prefix) and sep:
            origin = cfg.origin([spec.name, spec.kind, spec.implementation, *field.split(".")])
            if origin is not None:
                lines[index] = f"{line} ({origin})"
    return "\n".join(lines)


def upstream_urls(cfg: GymConfig) -> list[str]:
    """Base URLs of the upstream model endpoints named by the model server instances."""
    urls: list[str] = []
    for inst in cfg.instances_of("responses_api_models"):
        for key, value in inst.fields.items():
            if not key.endswith("base_url"):
                continue
            values = value if isinstance(value, list) else [value]
            for url in values:
                if isinstance(url, str) and url.strip() and url not in urls:
                    urls.append(url.strip())
    return urls
