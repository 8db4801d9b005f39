"""Fast, exact extraction of a result's metrics and ``rollout_infos`` record, compiled per row layout.

Rows of one collection almost always share a *layout*: the same top-level keys in the same order with
values of the same JSON types, and the same ``response.usage`` layout. :func:`plan_for` compiles, once
per layout, a small Python function that reads exactly the metric values and builds the
``rollout_infos`` record with constant keys (the keys enter the generated source only as ``repr()``
string literals).

Contract: a :class:`Plan`'s ``apply`` returns exactly what
:func:`rewardgym.profile.read.extract.extract_result` gives for a row of its layout — the metric values
(booleans as 0/1, in the order of ``Plan.names``) and the serialized ``rollout_infos`` record. Layouts a
plan cannot cover (usage fields named like top-level fields, value types other than JSON's, dict
subclasses) get ``apply=None`` and use ``Plan.generic``, i.e. ``extract_result`` itself.

For the file reader, ``Plan.bind`` also compiles the layout check itself: unpacking a row's keys and
values into locals and testing ``k == 'key'`` and ``type(v) is T`` in bytecode (which CPython runs
specialised) costs a third of building a tuple of all keys and types per row; a row of the layout is
then extracted and appended in the same call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from rewardgym.profile.read.chunks import RowHook
from rewardgym.profile.read.extract import extract_result
from rewardgym.protocol.keys import MASK_SAMPLE, RESPONSE, REWARD, ROLLOUT_INDEX, TASK_INDEX

_JSON_TYPES = frozenset((str, int, float, bool, dict, list, type(None)))
_NUMERIC = frozenset((int, float, bool))

Apply = Callable[[dict[str, Any], Any, int, int], tuple[tuple[Any, ...], bytes]]
Fast = Callable[[dict[str, Any]], bool]
Binder = Callable[[Any], Fast]


def _pieces(
    top: list[tuple[str, type]], usage: list[tuple[str, type]], has_reward: bool, top_var: Any, usage_var: Any
) -> tuple[list[str], list[str], list[str]]:
    """The metric names, the metric value expressions and the record's dict items of a layout."""
    names: list[str] = []
    values: list[str] = []
    info_items = ["'rollout_id': f'{task}:{rollout}'", f"{TASK_INDEX!r}: task", f"{ROLLOUT_INDEX!r}: rollout"]
    if has_reward:
        info_items.append(f"{REWARD!r}: {top_var(REWARD)}")
    top_info: list[str] = []
    for key, kind in top:
        expression = top_var(key) + (" + 0" if kind is bool else "")
        values.append(expression)
        names.append(key)
        if key != REWARD:
            top_info.append(f"{key!r}: {expression}")
    for key, kind in usage:
        expression = usage_var(key) + (" + 0" if kind is bool else "")
        info_items.append(f"{key!r}: {expression}")
        if key[:1] != "_":
            values.append(expression)
            names.append(key)
    return names, values, [*info_items, *top_info]


def _compile(
    top: list[tuple[str, type]], usage: list[tuple[str, type]], has_reward: bool
) -> tuple[Apply, tuple[str, ...]]:
    """Generate the extraction function of one layout and return it with its metric names."""
    names, values, items = _pieces(top, usage, has_reward, lambda k: f"row[{k!r}]", lambda k: f"usage[{k!r}]")
    source = (
        "def apply(row, usage, task, rollout):\n"
        f"    return ({''.join(f'{v}, ' for v in values)}), dumps({{{', '.join(items)}}})\n"
    )
    namespace: dict[str, Any] = {"dumps": orjson.dumps}
    exec(source, namespace)
    apply: Apply = namespace["apply"]
    return apply, tuple(names)


def _record_template(
    row: dict[str, Any],
    usage: dict[str, Any] | None,
    top: list[tuple[str, type]],
    usage_fields: list[tuple[str, type]],
    local: dict[str, str],
    usage_local: dict[str, str],
    task: str = "task",
    rollout: str = "rollout",
) -> tuple[bytes, list[str]]:
    """The record of a layout as a ``%`` template and its argument expressions: integers (and booleans,
    written as 0/1) with ``%d``, which prints the digits orjson prints; anything else — floats, and
    ``reward`` as parsed — with ``%b`` of its ``orjson.dumps``. The keys are assigned in the order
    :func:`~rewardgym.profile.read.extract.extract_result` assigns them, so a key given twice keeps its first
    position and its last value, as in that dict."""
    fields: dict[str, tuple[bytes, str]] = {
        "rollout_id": (b'"%d:%d"', f"{task}, {rollout}"),
        TASK_INDEX: (b"%d", task),
        ROLLOUT_INDEX: (b"%d", rollout),
    }

    def slot(expression: str, kind: type, as_is: bool) -> tuple[bytes, str]:
        if kind is int or (kind is bool and not as_is):
            return b"%d", expression
        return b"%b", f"dumps({expression})"

    if REWARD in row:
        fields[REWARD] = slot(local[REWARD], type(row[REWARD]), as_is=True)
    for key, kind in usage_fields:
        fields[key] = slot(usage_local[key], kind, as_is=False)
    for key, kind in top:
        if key != REWARD:
            fields[key] = slot(local[key], kind, as_is=False)
    template = (
        b"{"
        + b",".join(orjson.dumps(k).replace(b"%", b"%%") + b":" + t for k, (t, _) in fields.items())
        + b"}"
    )
    return template, [a for _, a in fields.values()]


def _compile_fast(
    row: dict[str, Any],
    usage: dict[str, Any] | None,
    top: list[tuple[str, type]],
    usage_fields: list[tuple[str, type]],
    names: tuple[str, ...],
    hook: RowHook | None,
) -> Binder | None:
    """Generate, for the layout of ``row``, the file reader's whole per-row work for rows of this layout
    (see :class:`Plan`); None when the layout has no integer indices (its rows are errors) or a list or
    object ``reward``."""
    keys = list(row)
    if type(row.get(TASK_INDEX)) is not int or type(row.get(ROLLOUT_INDEX)) is not int:
        return None
    if type(row.get(REWARD)) in (list, dict):
        return None  # each such reward's depth is checked on the slow path (see ``deep_reward``)
    local = {key: f"v{i}" for i, key in enumerate(keys)}
    usage_keys = list(usage or ())
    usage_local = {key: f"u{i}" for i, key in enumerate(usage_keys)}
    namespace: dict[str, Any] = {"dumps": orjson.dumps, "NAMES": names}
    type_checks = []
    for i, value in enumerate(row.values()):
        namespace[f"T{i}"] = type(value)
        type_checks.append(f"type(v{i}) is not T{i}")
    # The key tuples hold the plan row's own key objects: orjson hands out the same cached objects for
    # the same keys, so the comparison usually stops at identity.
    namespace["KEYS"] = tuple(row)
    body = [
        "        if tuple(row) != KEYS:",
        "            return False",
        f"        {', '.join(local.values())}, = row.values()",
        f"        if {' or '.join(type_checks)}:",
        "            return False",
    ]
    if type(row.get(RESPONSE)) is dict:
        body.append(f"        usage = {local[RESPONSE]}.get('usage')")
        if usage is None:
            body += ["        if type(usage) is dict and usage:", "            return False"]
    if usage is not None:
        for i, value in enumerate(usage.values()):
            namespace[f"U{i}"] = type(value)
        namespace["USAGE_KEYS"] = tuple(usage)
        body += [
            "        if type(usage) is not dict or tuple(usage) != USAGE_KEYS:",
            "            return False",
            f"        {', '.join(usage_local.values())}, = usage.values()",
            f"        if {' or '.join(f'type(u{i}) is not U{i}' for i in range(len(usage_keys)))}:",
            "            return False",
        ]
    if hook is not None:  # the caller's fields of the row, from the values unpacked above
        special = hook.layout(row, usage) if hook.layout is not None else None
        if special is None:
            namespace["HOOK"] = hook.per_row
            body.append("        hooked_append(HOOK(row))")
        else:
            namespace["HOOK"] = special
            arguments = [*local.values(), *(usage_local.values() if usage is not None else ())]
            body.append(f"        hooked_append(HOOK(row, {', '.join(arguments)}))")
    task, rollout = local[TASK_INDEX], local[ROLLOUT_INDEX]
    body += [f"        tasks_append({task})", f"        rollouts_append({rollout})"]
    if RESPONSE in row or REWARD in row:
        body.append("        outcome[0] += 1")
    if MASK_SAMPLE in row:
        body += [
            f"        if {local[MASK_SAMPLE]}:",
            "            shapes_append(-1)",
            "            return True",
        ]
    template, arguments = _record_template(row, usage, top, usage_fields, local, usage_local, task, rollout)
    namespace["TEMPLATE"] = template
    _, values, _ = _pieces(top, usage_fields, REWARD in row, local.__getitem__, usage_local.__getitem__)
    body += [
        f"        values_extend(({''.join(f'{v}, ' for v in values)}))",
        f"        infos_extend(TEMPLATE % ({''.join(f'{a}, ' for a in arguments)}))",
        "        ends_append(len(infos))",
        "        shapes_append(shape)",
        "        return True",
    ]
    source = "\n".join(
        [
            "def bind(out):",
            "    tasks_append, rollouts_append = out.tasks.append, out.rollouts.append",
            "    values_extend, infos, ends_append = out.values.extend, out.infos, out.info_ends.append",
            "    infos_extend, shapes_append, outcome = infos.extend, out.shapes.append, out.outcome",
            "    shape = out.shape_of(NAMES)",
            "    hooked_append = out.hooked.append",
            "    def fast(row):",
            *body,
            "    return fast",
        ]
    )
    exec(source, namespace)
    binder: Binder = namespace["bind"]
    return binder


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
    bind: Binder | None = None
    """``bind(out) -> fast``, for the file reader: ``fast(row)`` does the reader's whole work for a row of
    exactly this layout (compared key by key and type by type) — appends its key, with a row hook the
    hook's value, and unless it is masked its metric values, record and shape, to the chunk's outputs
    ``out`` — and returns True; for any other
    row it returns False and touches nothing. The indices' 64-bit range is checked when the chunk's key
    lists become arrays. None with ``generic``."""


def plan_for(row: dict[str, Any], usage: dict[str, Any] | None, hook: RowHook | None = None) -> Plan:
    """The plan for the layout of ``row`` (whose usage dict is ``usage``); with ``hook``, its fast path
    also appends the hook's value of each row to ``out.hooked``."""
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
    return Plan(apply=apply, names=names, bind=_compile_fast(row, usage, top, numeric_usage, names, hook))
