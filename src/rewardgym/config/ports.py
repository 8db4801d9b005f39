"""Hosts and ports: defaults for the head server and a free port for every instance that has none.

Contract:

* ``default_host`` (top-level key, default ``127.0.0.1``) is the host of every instance and of the head
  server that does not set its own.
* ``head_server`` defaults to ``{host: default_host, port: 11000}``; missing sub-keys are filled in.
* Explicit ports must be integers in 1..65535 and distinct (head server included), else
  :class:`~rewardgym.errors.ConfigError` naming the field.
* An instance without ``port`` (or with ``port: null``) gets a random port in
  ``[port_range_low, port_range_high]`` (default 10001..20000) that is not taken by another instance, the
  head server or ``disallowed_ports``, and that can be bound on the instance's host right now.
* The chosen host/port are written into the resolved data (the instance's fields and ``head_server``).

Most defaults are already written before interpolation by :mod:`rewardgym.config.prefill`; this strict
pass validates them and fills whatever that lenient pass could not.
"""

from __future__ import annotations

import copy
import random
import socket
from collections.abc import Iterable, Mapping
from typing import Any, Final

from rewardgym.config.instances import InstanceBlock, ServerInstance
from rewardgym.errors import ConfigError

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_HEAD_PORT: Final = 11000
DEFAULT_PORT_RANGE: Final = (10001, 20000)
_MAX_TRIES: Final = 200
_UNSET: Final = (None, "", "???")


def can_bind(host: str, port: int) -> bool:
    """True when a TCP listener could bind ``host:port`` now (nothing listens there)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError):
        return False
    family, socktype, proto, _, address = infos[0]
    with socket.socket(family, socktype, proto) as sock:
        try:
            sock.bind(address)
        except OSError:
            return False
    return True


def pick_free_port(
    host: str, taken: Iterable[int] = (), port_range: tuple[int, int] = DEFAULT_PORT_RANGE
) -> int:
    """A random port in ``port_range``, not in ``taken``, bindable on ``host``."""
    low, high = port_range
    avoid = set(taken)
    if not can_bind(host, 0):
        raise ConfigError(f"cannot listen on host {host!r} (not a local address or not resolvable)")
    rng = random.Random()
    for _ in range(_MAX_TRIES):
        if len(avoid) > high - low and avoid.issuperset(range(low, high + 1)):
            break
        port = rng.randint(low, high)
        if port not in avoid and can_bind(host, port):
            return port
        avoid.add(port)
    raise ConfigError(f"no free port found on {host!r} in {low}..{high} after {_MAX_TRIES} tries")


def _port_value(value: Any, where: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():  # e.g. from ${oc.env:PORT,8000}
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ConfigError(f"{where}: port must be an integer in 1..65535, got {value!r}")
    return value


def _host_value(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: host must be a non-empty string, got {value!r}")
    return value.strip()


def _int_setting(data: Mapping[str, Any], key: str, default: int) -> int:
    value = data.get(key)
    if value is None:
        return default
    return _port_value(value, key)


def assign_hosts_and_ports(
    data: dict[str, Any], blocks: Mapping[str, InstanceBlock]
) -> tuple[dict[str, ServerInstance], tuple[str, int]]:
    """Fill host/port defaults in ``data`` (see the module docstring); returns (instances, head address)."""
    default_host = _host_value(data.get("default_host", DEFAULT_HOST), "default_host")

    head = data.get("head_server")
    if head is None:
        head = data["head_server"] = {}
    if not isinstance(head, dict):
        raise ConfigError(f"head_server must be a mapping {{host: ..., port: ...}}, got {head!r}")
    head["host"] = _host_value(head.get("host") or default_host, "head_server.host")
    head_port = head.get("port")
    head["port"] = _port_value(DEFAULT_HEAD_PORT if head_port is None else head_port, "head_server.port")

    owners: dict[int, str] = {head["port"]: "head_server"}
    disallowed = data.get("disallowed_ports") or []
    if not isinstance(disallowed, list):
        raise ConfigError(f"disallowed_ports must be a list of ports, got {disallowed!r}")
    reserved = {_port_value(p, "disallowed_ports") for p in disallowed}

    for block in blocks.values():
        where = f"{block.name}.{block.kind}.{block.implementation}"
        host = block.fields.get("host")
        block.fields["host"] = _host_value(default_host if host in _UNSET else host, f"{where}.host")
        port = block.fields.get("port")
        if port in _UNSET:
            block.fields["port"] = None
            continue
        port = block.fields["port"] = _port_value(port, f"{where}.port")
        if port in owners:
            raise ConfigError(f"{where}.port: port {port} is already used by {owners[port]}")
        owners[port] = block.name

    low = _int_setting(data, "port_range_low", DEFAULT_PORT_RANGE[0])
    high = _int_setting(data, "port_range_high", DEFAULT_PORT_RANGE[1])
    if low > high:
        raise ConfigError(f"port_range_low ({low}) is greater than port_range_high ({high})")
    for block in blocks.values():
        if block.fields.get("port") is None:
            port = pick_free_port(block.fields["host"], set(owners) | reserved, (low, high))
            block.fields["port"] = port
            owners[port] = block.name

    instances = {
        block.name: ServerInstance(
            name=block.name,
            kind=block.kind,
            implementation=block.implementation,
            fields={k: copy.deepcopy(v) for k, v in block.fields.items() if k != "entrypoint"},
            host=block.fields["host"],
            port=block.fields["port"],
        )
        for block in blocks.values()
    }
    return instances, (head["host"], head["port"])
