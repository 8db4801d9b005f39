"""What the analysis takes from one parsed rollout row (pure; no I/O).

Contract of :func:`extract_row`: returns the tuple :data:`FIELDS` describes, or a one-line problem string
when the row has no usable key (``_ng_task_index`` / ``_ng_rollout_index`` missing or not an integer).
Numbers that are absent or not numeric become NaN; booleans count as numbers only for ``reward``. Text is
the ``output_text`` (or ``text``) of message items of ``response.output``; reasoning is the summary /
content text of ``reasoning`` items; tool calls are items whose ``type`` ends in ``_call`` (NeMo Gym's
list: function, tool, MCP, file/web search, computer, code interpreter, shell, custom calls). The text
hash is Python's string hash: equal texts hash equal within one run (forked readers share its seed),
which is all the identical-repeats check needs.
"""

from __future__ import annotations

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
    "has_response",
)

Row = tuple[
    int, int, float, float, float, float, float, bool, int, int, int, float, int, int, bool, str | None, bool
]
NAN = math.nan
_MASK = (1 << 64) - 1
_ABSENT = object()


def _number(value: Any) -> float:
    if type(value) is int or type(value) is float:
        return float(value)
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


def response_text(row: dict[str, Any]) -> tuple[str, str]:
    """``(visible text, reasoning text)`` of a rollout row."""
    response = row.get("response")
    texts: list[str] = []
    reasoning: list[str] = []
    if isinstance(response, dict):
        _texts(response.get("output"), texts, reasoning)
    return "".join(texts), "".join(reasoning)


def extract_row(row: dict[str, Any]) -> Row | str:
    """The analysis fields of one rollout row, or what is wrong with its key.

    Written flat (local lookups, no helper calls on the common path): it runs once per rollout line.
    """
    task = row.get(TASK_INDEX)
    rollout = row.get(ROLLOUT_INDEX)
    if type(task) is not int:
        return f"missing '{TASK_INDEX}'" if task is None else f"'{TASK_INDEX}' must be an integer"
    if type(rollout) is not int:
        return f"missing '{ROLLOUT_INDEX}'" if rollout is None else f"'{ROLLOUT_INDEX}' must be an integer"
    raw: Any = row.get("reward")
    kind = type(raw)
    reward = float(raw) if kind is float or kind is int or kind is bool else NAN
    tokens_in = tokens_out = total = cap = NAN
    incomplete = False
    calls = 0
    text = ""
    reasoning_chars = 0
    response = row.get("response")
    if type(response) is dict:
        usage = response.get("usage")
        if type(usage) is dict:  # the first present key counts, even when it is null
            value: Any = usage.get("input_tokens", _ABSENT)
            if value is _ABSENT:
                value = usage.get("prompt_tokens")
            if type(value) is int or type(value) is float:
                tokens_in = float(value)
            value = usage.get("output_tokens", _ABSENT)
            if value is _ABSENT:
                value = usage.get("completion_tokens")
            if type(value) is int or type(value) is float:
                tokens_out = float(value)
            value = usage.get("total_tokens")
            if type(value) is int or type(value) is float:
                total = float(value)
        value = response.get("max_output_tokens")
        if type(value) is int or type(value) is float:
            cap = float(value)
        details = response.get("incomplete_details")
        incomplete = response.get("status") == "incomplete" or (
            type(details) is dict and details.get("reason") in LENGTH_REASONS
        )
        output = response.get("output")
        if type(output) is list:
            texts: list[str] = []
            reasoning: list[str] = []
            if len(output) == 1 and type(output[0]) is dict and output[0].get("type") == "message":
                content = output[0].get("content")  # the common single-message answer
                if type(content) is list:
                    if len(content) == 1 and type(content[0]) is dict:  # ... of one part: no join
                        piece = content[0].get("text")
                        if type(piece) is str:
                            texts = [piece]
                    else:
                        for part in content:
                            if type(part) is dict:
                                piece = part.get("text")
                                if type(piece) is str:
                                    texts.append(piece)
                elif type(content) is str:
                    texts.append(content)
            else:
                calls = _texts(output, texts, reasoning)
            text = texts[0] if len(texts) == 1 else "".join(texts)
            if text and (text[0].isspace() or text[-1].isspace()):  # strip only when needed (a copy)
                text = text.strip()
            if reasoning:  # no generator for the common answer without reasoning
                reasoning_chars = sum(len(r.strip()) for r in reasoning)
    if math.isnan(total):  # no total_tokens
        total = tokens_in + tokens_out
    if math.isnan(cap):  # no cap on the response: the request's
        params = row.get("responses_create_params")
        if type(params) is dict:
            value = params.get("max_output_tokens", _ABSENT)
            if value is _ABSENT:
                value = params.get("max_tokens")
            if type(value) is int or type(value) is float:
                cap = float(value)
    perf = row.get("ng_perf")
    turns = _number(perf.get("num_turns")) if type(perf) is dict else NAN
    agent_ref = row.get("agent_ref")
    agent = agent_ref.get("name") if type(agent_ref) is dict else None
    if "extracted_answer" in row:
        value = row["extracted_answer"]
        extracted = 0 if value is None or (type(value) is str and not value.strip()) else 1
    else:
        extracted = -1
    return (
        task,
        rollout,
        reward,
        tokens_in,
        tokens_out,
        total,
        cap,
        incomplete,
        len(text),
        reasoning_chars,
        calls,
        turns,
        extracted,
        (hash(text) & _MASK) or 1 if text else 0,
        bool(row.get("mask_sample")),
        agent if type(agent) is str else None,
        type(response) is dict,
    )
