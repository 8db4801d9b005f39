"""What each task *is*, for the report's task browser: its prompt and the input row's other fields.

Contract of :func:`task_inputs(inputs, rollouts, columns, tasks)`: for the task positions ``tasks`` (at
most :data:`TASK_ROWS` of them are asked for), the task's input row — the first row of that task in the
materialized inputs when that file exists, else the task's first rollout line without its result keys
(``response``, ``reward``, ``_ng_*``) — as a :class:`TaskInput`: ``prompt``, the last user turn's text
(a string input as it is), cut at :data:`PROMPT_CHARS`; ``messages``, every input message as
``role: text`` lines, cut at :data:`FULL_CHARS`; ``fields``, the row without ``responses_create_params``
and ``_ng_*`` keys (the verifier's expected answer and the rest) as indented JSON, cut at
:data:`FIELDS_CHARS`. A row that cannot be read or parsed is left out (the browser then shows none):
the report never fails over a task's description. Reading stops once every asked task is found.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from rewardgym.analysis.columns import RolloutColumns

TASK_ROWS = 2000
PROMPT_CHARS = 400
FULL_CHARS = 6000
FIELDS_CHARS = 3000
_RESULT_KEYS = ("response", "reward")
_INDEX = re.compile(rb'"_ng_task_index":\s*(-?\d+)\s*[,}]')


@dataclass(frozen=True)
class TaskInput:
    prompt: str
    messages: str
    fields: str


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = (p.get("text") for p in content if isinstance(p, dict))
        return " ".join(p for p in parts if isinstance(p, str))
    return ""


def describe(row: dict[str, Any], from_rollout: bool = False) -> TaskInput:
    """The :class:`TaskInput` of one input row (see module doc)."""
    params = row.get("responses_create_params")
    source = params.get("input") if isinstance(params, dict) else None
    prompt, lines = "", []
    if isinstance(source, str):
        prompt, lines = source, [f"user: {source}"]
    elif isinstance(source, list):
        for item in source:
            if isinstance(item, dict):
                role = str(item.get("role", item.get("type", "")))
                text = _text(item.get("content"))
                lines.append(f"{role}: {text}")
                if role == "user":
                    prompt = text
    drop = ("responses_create_params", *(_RESULT_KEYS if from_rollout else ()))
    fields = {k: v for k, v in row.items() if k not in drop and not k.startswith("_ng_")}
    shown = orjson.dumps(fields, option=orjson.OPT_INDENT_2).decode() if fields else ""
    return TaskInput(
        prompt=_cut(" ".join(prompt.split()), PROMPT_CHARS),
        messages=_cut("\n".join(lines), FULL_CHARS),
        fields=_cut(shown, FIELDS_CHARS),
    )


def _from_inputs(inputs: Path, wanted: dict[int, int]) -> dict[int, TaskInput]:
    """First row per wanted task index (``wanted``: task index → position), skimming other lines."""
    found: dict[int, TaskInput] = {}
    with open(inputs, "rb") as handle:
        for raw in handle:
            at = raw.rfind(b'"_ng_task_index":')
            seen = _INDEX.match(raw, at) if at >= 0 else None
            if seen is None or int(seen[1]) not in wanted or wanted[int(seen[1])] in found:
                continue
            try:
                row = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            task = row.get("_ng_task_index") if isinstance(row, dict) else None
            if type(task) is int and task in wanted and wanted[task] not in found:
                found[wanted[task]] = describe(row)
                if len(found) == len(wanted):
                    break
    return found


def _from_rollouts(
    rollouts: Path, columns: RolloutColumns, task_ids: np.ndarray, positions: Iterable[int]
) -> dict[int, TaskInput]:
    found: dict[int, TaskInput] = {}
    with open(rollouts, "rb") as handle:
        for position in positions:
            start = int(np.searchsorted(columns.task, task_ids[position]))
            if start >= len(columns):
                continue
            handle.seek(int(columns.offset[start]))
            try:
                row = orjson.loads(handle.readline())
            except orjson.JSONDecodeError:
                continue
            if isinstance(row, dict):
                found[position] = describe(row, from_rollout=True)
    return found


def task_inputs(
    inputs: Path | None, rollouts: Path, columns: RolloutColumns, task_ids: np.ndarray, tasks: Iterable[int]
) -> tuple[dict[int, TaskInput], str]:
    """``(position → TaskInput, where they came from)`` (see module doc)."""
    positions = sorted(set(tasks))[:TASK_ROWS]
    try:
        if inputs is not None and inputs.is_file():
            wanted = {int(task_ids[p]): p for p in positions}
            return _from_inputs(inputs, wanted), "materialized inputs"
        return _from_rollouts(rollouts, columns, task_ids, positions), "each task's first rollout"
    except OSError:
        return {}, "none"
