"""Where a server may listen: loopback by default, the network only when a launcher placed it on a cluster
with the shared auth token (docs/security.md). Every launcher checks a server's host with :func:`check_bind`
before it binds (child processes, colocated servers, the head, the curriculum service)."""

from __future__ import annotations

import ipaddress

from rewardgym.errors import ConfigError

__all__ = ["check_bind", "is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is only reachable from this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def check_bind(name: str, host: str, *, network_bind: bool, token: object) -> None:
    """Refuse a non-loopback ``host`` unless placed on a cluster with the shared token (module docstring)."""
    if is_loopback(host):
        return
    if not network_bind:
        raise ConfigError(
            f"{name}.host: {host} is not a loopback address; servers listen on the network only when "
            "placed on a Ray cluster (gym env start --ray) with the shared auth token set — "
            "otherwise keep 127.0.0.1 and use an SSH tunnel (docs/security.md)"
        )
    if not token:
        raise ConfigError(
            f"{name}: refusing to listen on {host} without the shared auth token: every node of the "
            "cluster could call it; set ++auth_token=… (or auth_token in env.yaml, docs/security.md)"
        )
