"""NeMo Gym's block directives: ``_inherit_from``, ``_copy`` and ``_delete_key``.

Contract (applied to the merged, not yet interpolated config, as plain containers):

* A mapping with ``_inherit_from: a.b`` becomes a copy of the mapping at dotted path ``a.b`` with the block's
  own keys merged on top (OmegaConf merge), and the **source key is removed** from its parent.
* ``_copy: a.b`` does the same but keeps the source.
* The string values ``${inherit_from:a.b}`` and ``${copy:a.b}`` are the same directives written as a value.
* ``_delete_key: "k1,k2"`` (or a list) deletes those keys from the block, after any inherit/copy.
* A source path that does not exist or is not a mapping, or a cycle of inherits, is a
  :class:`~rewardgym.errors.ConfigError` naming the block.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from omegaconf import OmegaConf

from rewardgym.errors import ConfigError

INHERIT_KEY = "_inherit_from"
COPY_KEY = "_copy"
DELETE_KEY = "_delete_key"
_VALUE_DIRECTIVE = re.compile(r"^\$\{(inherit_from|copy):\s*([^}\s]+)\s*\}$")


def _lookup(root: dict[str, Any], dotted: str) -> Any:
    node: Any = root
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(dotted)
    return node


def _delete(root: dict[str, Any], dotted: str) -> None:
    *parents, last = dotted.split(".")
    node: Any = root
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(last, None)


def _delete_keys(block: dict[str, Any], spec: Any, where: str) -> None:
    if isinstance(spec, str):
        keys = [k.strip() for k in spec.split(",") if k.strip()]
    elif isinstance(spec, list) and all(isinstance(k, str) for k in spec):
        keys = list(spec)
    else:
        raise ConfigError(f"{where}.{DELETE_KEY} must be a comma-separated string or a list of keys")
    for key in keys:
        block.pop(key, None)


def _has_directive(data: Any) -> bool:
    if isinstance(data, dict):
        if INHERIT_KEY in data or COPY_KEY in data or DELETE_KEY in data:
            return True
        return any(_has_directive(v) for v in data.values())
    if isinstance(data, list):
        return any(_has_directive(v) for v in data)
    return isinstance(data, str) and _VALUE_DIRECTIVE.match(data) is not None


def apply_directives(data: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``data`` with every directive applied (see the module docstring)."""
    if not _has_directive(data):
        return data
    root = copy.deepcopy(data)
    removals: list[str] = []
    active: set[str] = set()

    def source_of(dotted: str, where: str, directive: str) -> dict[str, Any]:
        if dotted in active:
            raise ConfigError(f"{where}: {directive} {dotted!r} forms a cycle")
        try:
            source = _lookup(root, dotted)
        except KeyError:
            raise ConfigError(f"{where}: {directive} {dotted!r}: no such key in the config") from None
        if not isinstance(source, dict):
            raise ConfigError(f"{where}: {directive} {dotted!r} must name a mapping")
        active.add(dotted)
        try:
            resolved = process_block(source, dotted)
        finally:
            active.discard(dotted)
        return copy.deepcopy(resolved)

    def process_block(block: dict[str, Any], where: str) -> dict[str, Any]:
        for directive, keep_source in ((INHERIT_KEY, False), (COPY_KEY, True)):
            if directive not in block:
                continue
            target = block.pop(directive)
            if not isinstance(target, str) or not target:
                raise ConfigError(f"{where}.{directive} must be a dotted key path")
            base = source_of(target, where, directive)
            merged = OmegaConf.to_container(OmegaConf.merge(base, block), resolve=False)
            block.clear()
            block.update(merged)  # type: ignore[arg-type]
            if not keep_source:
                removals.append(target)
        if DELETE_KEY in block:
            _delete_keys(block, block.pop(DELETE_KEY), where)
        for key, value in list(block.items()):
            block[key] = process_value(value, f"{where}.{key}" if where else str(key))
        return block

    def process_value(value: Any, where: str) -> Any:
        if isinstance(value, dict):
            return process_block(value, where)
        if isinstance(value, list):
            return [process_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, str) and (match := _VALUE_DIRECTIVE.match(value)):
            kind, target = match.groups()
            if kind == "inherit_from":
                removals.append(target)
            return source_of(target, where, f"${{{kind}:…}}")
        return value

    process_block(root, "")
    for dotted in removals:
        _delete(root, dotted)
    return root
