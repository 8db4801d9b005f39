"""Fast, exact extraction of a result's metrics and ``rollout_infos`` record, compiled per row layout.

Rows of one collection almost always share a *layout*: the same top-level keys in the same order with
values of the same JSON types, and the same ``response.usage`` layout. :func:`plan_for` compiles, once
per layout, a small Python function that reads exactly the metric values and builds the
``rollout_infos`` record with constant keys (the keys enter the generated source only as ``repr()``
string literals).

Contract: a :class:`Plan`'s ``apply`` returns exactly what
:func:`rewardgym.profile.extract.extract_result` gives for a row of its layout — the metric values
(booleans as 0/1, in the order of ``Plan.names``) and the serialized ``rollout_infos`` record. Layouts a
plan cannot cover (usage fields named like top-level fields, value types other than JSON's, dict
subclasses) get ``apply=None`` and use ``Plan.generic``, i.e. ``extract_result`` itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from rewardgym.profile.extract import (
    MASK_SAMPLE,
    RESPONSE,
    REWARD,
    ROLLOUT_INDEX,
    TASK_INDEX,
    extract_result,
)

_JSON_TYPES = frozenset((str, int, float, bool, dict, list, type(None)))
_NUMERIC = frozenset((int, float, bool))

Apply = Callable[[dict[str, Any], Any, int, int], tuple[tuple[Any, ...], bytes]]


def _compile(
    top: list[tuple[str, type]], usage: list[tuple[str, type]], has_reward: bool
) -> tuple[Apply, tuple[str, ...]]:
    """Generate the extraction function of one layout and return it with its metric names."""
    lines = ["def apply(row, usage, task, rollout):"]
    metric_vars: list[str] = []
    names: list[str] = []
    info_items = [
        "'rollout_id': f'{task}:{rollout}'",
        f"{TASK_INDEX!r}: task",
        f"{ROLLOUT_INDEX!r}: rollout",
    ]
    if has_reward:
        info_items.append(f"{REWARD!r}: row[{REWARD!r}]")
    top_info: list[str] = []
    for i, (key, kind) in enumerate(top):
        var = f"t{i}"
        lines.append(f"    {var} = row[{key!r}]" + (" + 0" if kind is bool else ""))
        metric_vars.append(var)
        names.append(key)
        if key != REWARD:
            top_info.append(f"{key!r}: {var}")
    for i, (key, kind) in enumerate(usage):
        var = f"u{i}"
        lines.append(f"    {var} = usage[{key!r}]" + (" + 0" if kind is bool else ""))
        info_items.append(f"{key!r}: {var}")
        if key[:1] != "_":
            metric_vars.append(var)
            names.append(key)
    info_items.extend(top_info)
    values = "(" + "".join(f"{v}, " for v in metric_vars) + ")"
    lines.append(f"    return {values}, dumps({{{', '.join(info_items)}}})")
    namespace: dict[str, Any] = {"dumps": orjson.dumps}
    exec("\n".join(lines), namespace)
    apply: Apply = namespace["apply"]
    return apply, tuple(names)


def usage_of(row: dict[str, Any]) -> dict[str, Any] | None:
    """The result's non-empty ``response.usage`` dict, or None ("no usage")."""
    response = row.get(RESPONSE)
    if not isinstance(response, dict):
        return None
    usage = response.get("usage")
    return usage if isinstance(usage, dict) and usage else None


def _generic(row: dict[str, Any], task: int, rollout: int) -> tuple[tuple[str, ...], tuple[Any, ...], bytes]:
    names, values, info = extract_result(row, task, rollout)
    return tuple(names), tuple(values), orjson.dumps(info, option=orjson.OPT_SERIALIZE_NUMPY)


@dataclass(frozen=True)
class Plan:
    """How to extract the rows of one layout."""

    apply: Apply | None
    """Compiled extraction ``(row, usage, task, rollout) -> (values, info bytes)``; None: use ``generic``."""
    names: tuple[str, ...] | None
    """Metric names of every row of the layout (None with ``generic``)."""
    generic: Callable[[dict[str, Any], int, int], tuple[tuple[str, ...], tuple[Any, ...], bytes]] = _generic
    """The slow, general extraction."""


def plan_for(row: dict[str, Any], usage: dict[str, Any] | None) -> Plan:
    """The plan for the layout of ``row`` (whose usage dict is ``usage``)."""
    types = [type(v) for v in row.values()]
    usage_types = [type(v) for v in usage.values()] if usage else []
    if type(row) is not dict or (usage is not None and type(usage) is not dict):
        return Plan(apply=None, names=None)
    if not _JSON_TYPES.issuperset(types) or not _JSON_TYPES.issuperset(usage_types):
        return Plan(apply=None, names=None)
    if usage and not usage.keys().isdisjoint(row.keys()):
        return Plan(apply=None, names=None)
    top = [
        (k, kind)
        for k, kind in zip(row, types, strict=True)
        if kind in _NUMERIC and k[:1] != "_" and k != MASK_SAMPLE
    ]
    numeric_usage = [(k, kind) for k, kind in zip(usage or (), usage_types, strict=True) if kind in _NUMERIC]
    apply, names = _compile(top, numeric_usage, REWARD in row)
    return Plan(apply=apply, names=names)
