"""What the analysis takes from one parsed rollout row (pure; no I/O).

Contract of :func:`extract_row`: returns the tuple :data:`FIELDS` describes, or a one-line problem string
when the row has no usable key (``_ng_task_index`` / ``_ng_rollout_index`` missing or not an integer).
Numbers that are absent or not numeric become NaN; booleans count as numbers only for ``reward``. Text is
the ``output_text`` (or ``text``) of message items of ``response.output``; reasoning is the summary /
content text of ``reasoning`` items; tool calls are items whose ``type`` ends in ``_call`` (NeMo Gym's
list: function, tool, MCP, file/web search, computer, code interpreter, shell, custom calls).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

TASK_INDEX = "_ng_task_index"
ROLLOUT_INDEX = "_ng_rollout_index"
LENGTH_REASONS = frozenset(("max_output_tokens", "max_tokens", "length"))

FIELDS = (
    "task",
    "rollout",
    "reward",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cap",
    "incomplete",
    "text_chars",
    "reasoning_chars",
    "tool_calls",
    "turns",
    "extracted",
    "text_hash",
    "masked",
    "agent",
)

Row = tuple[
    int, int, float, float, float, float, float, bool, int, int, int, float, int, int, bool, str | None
]
NAN = math.nan


def _number(value: Any) -> float:
    if type(value) is int or type(value) is float:
        return float(value)
    return NAN


def _first(mapping: dict[str, Any], *names: str) -> float:
    for name in names:
        if name in mapping:
            return _number(mapping[name])
    return NAN


def _texts(items: Any, into: list[str], reasoning: list[str]) -> int:
    """Collect message and reasoning text of output items; return the number of tool calls."""
    calls = 0
    if not isinstance(items, list):
        return 0
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message" or (kind is None and "content" in item):
            content = item.get("content")
            if isinstance(content, str):
                into.append(content)
            elif isinstance(content, list):
                for part in content:
                    if isinstance(part, dict):
                        text = part.get("text")
                        if isinstance(text, str):
                            into.append(text)
        elif kind == "reasoning":
            for key in ("summary", "content"):
                parts = item.get(key)
                if isinstance(parts, list):
                    for part in parts:
                        if isinstance(part, dict) and isinstance(part.get("text"), str):
                            reasoning.append(part["text"])
        elif isinstance(kind, str) and kind.endswith("_call"):
            calls += 1
    return calls


def _extracted(row: dict[str, Any]) -> int:
    if "extracted_answer" not in row:
        return -1
    value = row["extracted_answer"]
    return 0 if value is None or (isinstance(value, str) and not value.strip()) else 1


def text_hash(text: str) -> int:
    """A stable 64-bit hash of a response text (0 for empty text)."""
    if not text:
        return 0
    return (
        int.from_bytes(hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).digest(), "little")
        or 1
    )


def response_text(row: dict[str, Any]) -> tuple[str, str]:
    """``(visible text, reasoning text)`` of a rollout row."""
    response = row.get("response")
    texts: list[str] = []
    reasoning: list[str] = []
    if isinstance(response, dict):
        _texts(response.get("output"), texts, reasoning)
    return "".join(texts), "".join(reasoning)


def extract_row(row: dict[str, Any]) -> Row | str:
    """The analysis fields of one rollout row, or what is wrong with its key."""
    task, rollout = row.get(TASK_INDEX), row.get(ROLLOUT_INDEX)
    if type(task) is not int:
        return f"missing '{TASK_INDEX}'" if task is None else f"'{TASK_INDEX}' must be an integer"
    if type(rollout) is not int:
        return f"missing '{ROLLOUT_INDEX}'" if rollout is None else f"'{ROLLOUT_INDEX}' must be an integer"
    raw_reward = row.get("reward")
    reward = float(raw_reward) if isinstance(raw_reward, (int, float)) else NAN
    response = row.get("response")
    response = response if isinstance(response, dict) else {}
    usage = response.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    tokens_in = _first(usage, "input_tokens", "prompt_tokens")
    tokens_out = _first(usage, "output_tokens", "completion_tokens")
    total = _first(usage, "total_tokens")
    if math.isnan(total):
        total = tokens_in + tokens_out
    cap = _number(response.get("max_output_tokens"))
    if math.isnan(cap):
        params = row.get("responses_create_params")
        if isinstance(params, dict):
            cap = _first(params, "max_output_tokens", "max_tokens")
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    incomplete = response.get("status") == "incomplete" or reason in LENGTH_REASONS
    texts: list[str] = []
    reasoning: list[str] = []
    calls = _texts(response.get("output"), texts, reasoning)
    text = "".join(texts)
    perf = row.get("ng_perf")
    turns = _number(perf.get("num_turns")) if isinstance(perf, dict) else NAN
    agent_ref = row.get("agent_ref")
    agent = agent_ref.get("name") if isinstance(agent_ref, dict) else None
    return (
        task,
        rollout,
        reward,
        tokens_in,
        tokens_out,
        total,
        cap,
        incomplete,
        len(text.strip()),
        sum(len(r.strip()) for r in reasoning),
        calls,
        turns,
        _extracted(row),
        text_hash(text.strip()),
        bool(row.get("mask_sample")),
        agent if isinstance(agent, str) else None,
    )
