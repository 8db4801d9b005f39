"""What the profiler takes from one materialized-input row or one rollout row (NeMo Gym 0.7.0 rules).

Contract (pure functions of one parsed row; no I/O):

- :func:`row_key` returns the row's ``(_ng_task_index, _ng_rollout_index)`` or a :class:`KeyProblem`
  describing why it has none (missing key, not an integer, out of the 64-bit range). Booleans are not
  integers here.
- :func:`row_identity` returns an input row's agent name (``agent_ref.name``) and *run key*
  (``_ng_environment_server`` when present, else the agent name).
- :func:`is_masked` is Python truthiness of the top-level ``mask_sample`` (``true``, ``1``, ``"yes"`` mask;
  ``false``, ``0``, ``null``, ``""`` and a missing key do not).
- :func:`extract_result` returns a measured result's metric fields — every int/float/bool of
  ``result | response.usage`` (booleans as 0/1) whose name does not start with ``_``, in that merged
  dict's key order, ``mask_sample`` removed first — and its ``rollout_infos`` record: ``rollout_id``
  ``"t:r"``, both indices, ``reward`` as written (any type), the numeric usage fields (unfiltered), then
  the numeric top-level fields other than the indices, ``reward``, ``response`` and ``_``-prefixed names.
  A missing or ``null`` ``response``/``usage`` means "no usage".
- :func:`reward_problem` says why a row's ``reward`` is not a number (a string — numeric or not —,
  ``null``, a list or an object); NeMo Gym silently leaves such a reward out of the statistics, the
  profiler refuses it unless asked to do the same (``--allow-non-numeric-rewards``). A missing ``reward``
  is not a problem (the row has no reward metric, as in NeMo Gym).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rewardgym.io.jsonl import MAX_DEPTH, nesting_depth

# ``rewardgym.protocol.keys`` is plain strings: importing it loads no pydantic model (``rewardgym.protocol``
# is lazy), so the profiler, which reads plain JSON, pays nothing for the contract's key names.
from rewardgym.protocol.keys import (
    AGENT_REF,
    ENVIRONMENT_SERVER,
    MASK_SAMPLE,
    RESPONSE,
    REWARD,
    ROLLOUT_INDEX,
    TASK_INDEX,
)

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_INFO_SKIP = frozenset((TASK_INDEX, ROLLOUT_INDEX, REWARD, RESPONSE))
NUMERIC_TYPES = frozenset((int, float, bool))
"""The JSON value types that are metrics (a boolean counts as 0/1)."""
_SHOWN_CHARS = 40


@dataclass(frozen=True)
class KeyProblem:
    """Why a row has no usable rollout key (the message fragment names the field)."""

    message: str


def _index(row: dict[str, Any], name: str) -> int | str:
    if name not in row:
        return f"missing '{name}'"
    value = row[name]
    if type(value) is not int:
        shown = "null" if value is None else repr(value)
        return f"'{name}' must be an integer, got {shown}"
    if not _INT64_MIN <= value <= _INT64_MAX:
        return f"'{name}' is out of the 64-bit integer range: {value}"
    return value


def row_key(row: dict[str, Any]) -> tuple[int, int] | KeyProblem:
    """The row's ``(task, rollout)`` key, or what is wrong with it."""
    task = row.get(TASK_INDEX)
    rollout = row.get(ROLLOUT_INDEX)
    if (
        type(task) is int
        and type(rollout) is int
        and _INT64_MIN <= task <= _INT64_MAX
        and _INT64_MIN <= rollout <= _INT64_MAX
    ):
        return task, rollout
    problems = [p for p in (_index(row, TASK_INDEX), _index(row, ROLLOUT_INDEX)) if isinstance(p, str)]
    return KeyProblem("; ".join(problems))


def _name(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def row_identity(row: dict[str, Any]) -> tuple[str | None, str | None]:
    """``(agent name, run key)`` of a materialized-input row; either may be None."""
    ref = row.get(AGENT_REF)
    agent = _name(ref.get("name")) if isinstance(ref, dict) else None
    server = _name(row.get(ENVIRONMENT_SERVER))
    return agent, (server if server is not None else agent)


def is_masked(result: dict[str, Any]) -> bool:
    """Whether a result is masked out of the quality statistics (truthy top-level ``mask_sample``)."""
    return bool(result.get(MASK_SAMPLE))


def _usage(result: dict[str, Any]) -> dict[str, Any] | None:
    response = result.get(RESPONSE)
    if not isinstance(response, dict):
        return None
    usage = response.get("usage")
    return usage if isinstance(usage, dict) and usage else None


def _number(value: Any) -> int | float | None:
    """The value as a metric (bool → 0/1), or None when it is not an int/float/bool."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return value
    return None


def extract_result(
    result: dict[str, Any], task: int, rollout: int
) -> tuple[list[str], list[int | float], dict[str, Any]]:
    """Metric field names, their values (bool → 0/1) and the ``rollout_infos`` record of a measured result.

    This is the general definition; :mod:`rewardgym.profile.read.row_layouts` compiles faster equivalents
    per row layout.
    """
    usage = _usage(result) or {}
    merged = result | usage
    # ``mask_sample`` is removed from every measured result before the merge (a usage field of that
    # name, absurd as it would be, survives like any other usage field).
    drop_mask = MASK_SAMPLE in result and MASK_SAMPLE not in usage
    names: list[str] = []
    values: list[int | float] = []
    for name, value in merged.items():
        number = _number(value)
        if number is None or name[:1] == "_" or (drop_mask and name == MASK_SAMPLE):
            continue
        names.append(name)
        values.append(number)
    info: dict[str, Any] = {"rollout_id": f"{task}:{rollout}", TASK_INDEX: task, ROLLOUT_INDEX: rollout}
    if REWARD in result:
        info[REWARD] = result[REWARD]
    for name, value in usage.items():
        number = _number(value)
        if number is not None:
            info[name] = number
    for name, value in result.items():
        if name in _INFO_SKIP or name[:1] == "_" or name == MASK_SAMPLE:
            continue
        number = _number(value)
        if number is not None:
            info[name] = number
    return names, values, info


def reward_problem(row: dict[str, Any]) -> str | None:
    """Why the row's ``reward`` is not a number (None when it is one, or when the row has none)."""
    if REWARD not in row:
        return None
    value = row[REWARD]
    if type(value) in NUMERIC_TYPES:
        return None
    if value is None:
        shown = "null"
    elif isinstance(value, str):
        text = value if len(value) <= _SHOWN_CHARS else value[:_SHOWN_CHARS] + "…"
        shown = f"the string {text!r}"
    elif isinstance(value, list):
        shown = "a list"
    elif isinstance(value, dict):
        shown = "an object"
    else:
        shown = f"a {type(value).__name__}"
    return (
        f"'reward' must be a number, got {shown} (NeMo Gym leaves such a reward out of the statistics "
        "without a word: --allow-non-numeric-rewards or ++allow_non_numeric_rewards=true does the same)"
    )


def deep_reward(row: dict[str, Any]) -> str | None:
    """Why a non-numeric ``reward`` (kept as written in ``rollout_infos``) cannot be written back: nested
    deeper than orjson writes. Checked per row: such layouts have no compiled fast path."""
    value = row.get(REWARD)
    if not isinstance(value, list | dict) or nesting_depth(value) < MAX_DEPTH:
        return None
    return f"'reward' is nested more than {MAX_DEPTH - 1} levels deep, too deep to be written back as JSON"


def looks_like_rollout(row: dict[str, Any]) -> bool:
    """A row that carries a rollout's outcome (``response`` or ``reward``): not a materialized input."""
    return RESPONSE in row or REWARD in row
