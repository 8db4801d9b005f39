"""From a loaded :class:`~rewardgym.config.GymConfig` to what the supervisor launches.

Contract:
- :func:`child_specs`: one :class:`~rewardgym.launch.child_spec.ChildSpec` per server instance, in config
  order. Each config is the instance's resolved fields plus ``name``, ``host``, ``port``, ``peers`` (every
  other instance's URL) and the run-wide defaults the instance does not set itself: ``log_dir``,
  ``log_level``, ``auth_token``, ``observability_enabled``, ``model_call_capture_dir``; and every
  secret value registered in this process (``secrets``, so the
  child masks what the supervisor masks). Nothing is imported: building specs is cheap, so children can be
  spawned at once.
- Replicas: an instance with ``replicas: N`` (an integer ≥ 1, default 1) gives N specs of the same name;
  replica 0 keeps the instance's port, the others get free ports of ``port_range_low..port_range_high``,
  and every other instance sees the instance's peer entry as the list of all N URLs (its clients spread
  calls over them, :mod:`rewardgym.http.balancer`). The instance's ``ray:`` block (placement under Ray) is
  taken out of the server's config into :attr:`ChildSpec.placement`.
- ``colocate: true`` marks every instance with one replica and no ``ray:`` block
  (:attr:`ChildSpec.colocate`): the supervisor serves them from one process (:mod:`.colocate`).
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
from rewardgym.config.colocation import colocated
from rewardgym.config.instances import ServerInstance
from rewardgym.config.observability import capture_dir
from rewardgym.config.ports import DEFAULT_PORT_RANGE, pick_free_port
from rewardgym.config.secrets import registered_secrets
from rewardgym.errors import ConfigError
from rewardgym.launch.child_spec import ChildSpec, server_class

RUN_DEFAULTS = ("log_level", "auth_token", "observability_enabled", "model_call_capture_dir")


def replica_count(inst: ServerInstance) -> int:
    """The instance's ``replicas`` (default 1); :class:`ConfigError` naming the field unless an int ≥ 1."""
    value = inst.fields.get("replicas", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        where = f"{inst.name}.{inst.kind}.{inst.implementation}.replicas"
        raise ConfigError(f"{where}: must be an integer >= 1, got {value!r}")
    return value


def placement_of(inst: ServerInstance) -> dict[str, Any]:
    value = inst.fields.get("ray") or {}
    if not isinstance(value, dict):
        raise ConfigError(f"{inst.name}.{inst.kind}.{inst.implementation}.ray: must be a mapping")
    return dict(value)


def port_range(cfg: GymConfig) -> tuple[int, int]:
    """The config's ``port_range_low..port_range_high``."""
    low = int(cfg.get("port_range_low") or DEFAULT_PORT_RANGE[0])
    high = int(cfg.get("port_range_high") or DEFAULT_PORT_RANGE[1])
    return low, high


def _replica_ports(cfg: GymConfig) -> dict[str, list[int]]:
    """Every instance's ports: its own, plus a free one per further replica."""
    _host, head_port = cfg.head_server
    taken = [head_port, *(inst.port for inst in cfg.instances.values())]
    taken += list(cfg.get("disallowed_ports") or [])
    low, high = port_range(cfg)
    ports: dict[str, list[int]] = {}
    for inst in cfg.instances.values():
        ports[inst.name] = [inst.port]
        for _ in range(replica_count(inst) - 1):
            port = pick_free_port(inst.host, taken, (low, high))
            taken.append(port)
            ports[inst.name].append(port)
    return ports


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def child_specs(cfg: GymConfig, *, log_dir: Path) -> list[ChildSpec]:
    """The launch specs of every instance of ``cfg``, one per replica (see the module docstring)."""
    instances = cfg.instances
    if not instances:
        raise ConfigError("the config defines no server instances (use --config, --resources-server, …)")
    capture_dir(cfg)  # a missing or relative capture directory: one line, before anything starts
    colocate = colocated(cfg)
    ports = _replica_ports(cfg)
    peers: dict[str, str | list[str]] = {}
    for name, inst in instances.items():
        urls = [_url(inst.host, port) for port in ports[name]]
        peers[name] = urls if len(urls) > 1 else urls[0]
    secrets = sorted(registered_secrets())
    specs = []
    for inst in instances.values():
        count = len(ports[inst.name])
        placement = placement_of(inst)
        for replica, port in enumerate(ports[inst.name]):
            config: dict[str, Any] = {**inst.fields, "name": inst.name, "host": inst.host, "port": port}
            for key in ("entrypoint", "replicas", "ray"):
                config.pop(key, None)
            config["peers"] = {k: v for k, v in peers.items() if k != inst.name}
            config.setdefault("log_dir", str(log_dir))
            if replica:
                config["log_dir"] = str(Path(config["log_dir"]) / f"replica{replica}")
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
                    replica=replica,
                    replicas=count,
                    placement=placement,
                    colocate=colocate and count == 1 and not placement,
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
