"""``colocate``: the run-wide switch that serves a stack's servers from one process.

Off by default. When true, ``gym env start`` (and ``gym eval run`` when it starts the servers) serves every
instance with one replica and no ``ray:`` block from one process, and their calls to each other skip the
socket (:mod:`rewardgym.launch.colocate` has the what and the trade-off).
"""

from __future__ import annotations

from rewardgym.config.observability import SupportsGet
from rewardgym.errors import ConfigError

__all__ = ["colocated"]


def colocated(cfg: SupportsGet) -> bool:
    """The ``colocate`` switch of a config; a value that is not a boolean is a :class:`ConfigError`."""
    value = cfg.get("colocate", False)
    if value in (None, ""):
        return False
    if not isinstance(value, bool):
        origin = getattr(cfg, "origin", None)  # a loaded GymConfig knows the override or file:line
        where = origin(["colocate"]) if callable(origin) else None
        suffix = f" ({where})" if where else ""
        raise ConfigError(f"colocate: must be true or false, got {value!r}{suffix}")
    return value
