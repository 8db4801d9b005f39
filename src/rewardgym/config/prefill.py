"""Host and port defaults written into the *unresolved* config, so that interpolations can refer to them.

Like NeMo Gym, defaults are populated before ``${…}`` is resolved: ``${head_server.port}`` or
``${mcqa.resources_servers.mcqa.port}`` resolve to the filled-in values. This pass is lenient. Anything it
cannot understand (a malformed block, a value that does not resolve, a bad host) is left alone for the
strict pass after resolution (:func:`~rewardgym.config.ports.assign_hosts_and_ports`), which validates
everything, including what this pass wrote, and reports errors.
"""

from __future__ import annotations

from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from rewardgym.config.instances import RESERVED_KEYS, SERVER_KINDS
from rewardgym.config.ports import DEFAULT_HEAD_PORT, DEFAULT_HOST, DEFAULT_PORT_RANGE, pick_free_port
from rewardgym.errors import ConfigError

_UNSET = (None, "", "???")


def _peek(tree: Any, path: str, default: Any) -> Any:
    """The resolved value at ``path``, or ``default`` when it is absent, ``???`` or does not resolve."""
    try:
        value = OmegaConf.select(tree, path, default=default, throw_on_missing=False)
    except OmegaConfBaseException:
        return default
    return default if value in _UNSET else value


def _port(value: Any) -> int | None:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 65536 else None


def _instance_fields(raw: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(dotted path, fields dict) of each block that already has the exact instance shape."""
    found = []
    for name, value in raw.items():
        if (
            not isinstance(name, str)
            or name in RESERVED_KEYS
            or not isinstance(value, dict)
            or len(value) != 1
        ):
            continue
        kind, impls = next(iter(value.items()))
        if kind not in SERVER_KINDS or not isinstance(impls, dict) or len(impls) != 1:
            continue
        impl, fields = next(iter(impls.items()))
        if fields is None:
            fields = impls[impl] = {}
        if isinstance(impl, str) and isinstance(fields, dict):
            found.append((f"{name}.{kind}.{impl}", fields))
    return found


def prefill_hosts_and_ports(raw: dict[str, Any]) -> None:
    """Fill ``head_server`` and each instance's missing ``host``/``port`` in ``raw``, in place."""
    try:
        tree = OmegaConf.create(raw)
    except OmegaConfBaseException:
        return
    default_host = _peek(tree, "default_host", DEFAULT_HOST)
    if not isinstance(default_host, str):
        default_host = DEFAULT_HOST

    if raw.get("head_server") is None:
        raw["head_server"] = {}
    head = raw["head_server"]
    taken: set[int] = set()
    if isinstance(head, dict):
        if head.get("host") in _UNSET:
            head["host"] = default_host
        if head.get("port") in _UNSET:
            head["port"] = DEFAULT_HEAD_PORT
            taken.add(DEFAULT_HEAD_PORT)
        elif (head_port := _port(_peek(tree, "head_server.port", None))) is not None:
            taken.add(head_port)

    disallowed = _peek(tree, "disallowed_ports", [])
    if OmegaConf.is_list(disallowed):
        taken.update(p for p in (_port(v) for v in disallowed) if p is not None)

    blocks = _instance_fields(raw)
    for path, fields in blocks:
        if fields.get("port") not in _UNSET and (port := _port(_peek(tree, f"{path}.port", None))):
            taken.add(port)

    low = _port(_peek(tree, "port_range_low", DEFAULT_PORT_RANGE[0]))
    high = _port(_peek(tree, "port_range_high", DEFAULT_PORT_RANGE[1]))
    for path, fields in blocks:
        if fields.get("host") in _UNSET:
            fields["host"] = default_host
        if fields.get("port") not in _UNSET:
            continue
        host = _peek(tree, f"{path}.host", default_host)
        if low is None or high is None or low > high or not isinstance(host, str):
            continue
        try:
            fields["port"] = pick_free_port(host, taken, (low, high))
        except ConfigError:
            continue  # reported by the strict pass
        taken.add(fields["port"])
