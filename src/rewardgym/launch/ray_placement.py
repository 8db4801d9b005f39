"""Where the servers go on Ray: the run's Ray settings and each replica's actor options and demand.

Contract (pure; Ray is not imported):

- :func:`ray_options` — the ``--ray`` flag (``local`` = start a local cluster) over the config's ``ray:``
  block (``address``, ``spec_dir``, ``placement_timeout_s``); ``None`` without either; an unknown key is a
  :class:`~rewardgym.errors.ConfigError` naming the known ones.
- :func:`actor_options` — a replica's Ray actor options from its instance's ``ray:`` block (``num_cpus``,
  ``num_gpus``, ``memory``, ``resources``, ``labels``, ``max_restarts`` — default 3); replicas of one
  instance are spread (``SPREAD``).
- :func:`demand` / :func:`offers` — what a replica asks of a node and whether a node (of ``ray.nodes()``)
  has it, so an instance no live node can take is an error before any server starts.

:mod:`.ray_launch` (the launcher) re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardgym.config.ports import DEFAULT_PORT_RANGE
from rewardgym.errors import ConfigError
from rewardgym.launch.child_spec import ChildSpec

DEFAULT_MAX_RESTARTS = 3
PLACEMENT_KEYS = frozenset({"num_cpus", "num_gpus", "resources", "labels", "max_restarts", "memory"})


@dataclass
class RayOptions:
    """Where and how to place the servers on Ray."""

    address: str | None = None
    """``auto``, a cluster address, or ``None`` to start a local cluster."""
    spec_dir: Path | None = None
    """Folder of the replicas' spec files (secrets inside; default ``<log dir>/.specs``)."""
    placement_timeout_s: float = 120.0
    init_kwargs: dict[str, Any] = field(default_factory=dict)
    """Further ``ray.init`` arguments for a local cluster (e.g. ``num_cpus``)."""
    port_range: tuple[int, int] = DEFAULT_PORT_RANGE
    """``port_range_low..port_range_high``: each server's port on its node is taken from it."""


def ray_options(
    cfg_ray: Any, cli_address: str | None, ports: tuple[int, int] = DEFAULT_PORT_RANGE
) -> RayOptions | None:
    """The Ray settings of a run: the ``--ray`` flag (``local`` = start one) over the config's ``ray:``
    block (``address``, ``spec_dir``, ``placement_timeout_s``); ``None`` without either. ``ports``: the
    config's port range, which every server honours on its node too."""
    if cli_address is None and not cfg_ray:
        return None
    block = dict(cfg_ray) if isinstance(cfg_ray, dict) else {}
    unknown = sorted(set(block) - {"address", "spec_dir", "placement_timeout_s"})
    if unknown:
        raise ConfigError(
            f"ray: unknown key(s) {', '.join(unknown)} (address, spec_dir, placement_timeout_s)"
        )
    address = cli_address if cli_address is not None else block.get("address")
    if address in ("", "local", None):
        address = None
    spec_dir = block.get("spec_dir")
    return RayOptions(
        address=str(address) if address is not None else None,
        spec_dir=Path(str(spec_dir)).expanduser() if spec_dir else None,
        placement_timeout_s=float(block.get("placement_timeout_s") or 120.0),
        port_range=ports,
    )


def actor_options(spec: ChildSpec) -> dict[str, Any]:
    """Ray actor options of one replica from its instance's ``ray:`` block (see the module docstring)."""
    block = spec.placement
    where = f"{spec.name}.{spec.kind}.{spec.implementation}.ray"
    unknown = sorted(set(block) - PLACEMENT_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)} ({', '.join(sorted(PLACEMENT_KEYS))})"
        )
    options: dict[str, Any] = {
        "max_restarts": int(block.get("max_restarts", DEFAULT_MAX_RESTARTS)),
        "max_task_retries": -1,  # a status call waits for a restart instead of failing during it
    }
    for key in ("num_cpus", "num_gpus", "memory"):
        if block.get(key) is not None:
            options[key] = block[key]
    if block.get("resources"):
        options["resources"] = {str(k): float(v) for k, v in dict(block["resources"]).items()}
    if block.get("labels"):
        options["label_selector"] = {str(k): str(v) for k, v in dict(block["labels"]).items()}
    if spec.replicas > 1:
        options["scheduling_strategy"] = "SPREAD"
    return options


def demand(options: dict[str, Any]) -> dict[str, Any]:
    """What a replica asks of its node (Ray resource names → amounts, plus ``labels``)."""
    asks: dict[str, Any] = {"CPU": options.get("num_cpus", 1)}  # Ray's default: a CPU to be scheduled
    if options.get("num_gpus"):
        asks["GPU"] = options["num_gpus"]
    if options.get("memory"):
        asks["memory"] = options["memory"]
    asks.update(options.get("resources") or {})
    if options.get("label_selector"):
        asks["labels"] = dict(options["label_selector"])
    return asks


def offers(node: dict[str, Any], asks: dict[str, Any]) -> bool:
    """Whether a node (an entry of ``ray.nodes()``) has in total what ``asks`` wants."""
    total = node.get("Resources") or {}
    for name, amount in asks.items():
        if name == "labels":
            labels = node.get("Labels")
            if isinstance(labels, dict) and any(labels.get(k) != v for k, v in amount.items()):
                return False
        elif float(total.get(name, 0.0)) < float(amount):
            return False
    return True
