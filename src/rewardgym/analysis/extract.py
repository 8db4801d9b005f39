"""What the analysis takes from one parsed rollout row (pure; no I/O).

Contract of :func:`pack_row`: returns the row's :data:`FIELDS` packed as one :data:`RECORD` (the agent as
an index into this process's :func:`agent_names`), or a one-line problem string when the row has no usable
key (``_ng_task_index`` / ``_ng_rollout_index`` missing, not an integer, or beyond 64 bits);
:func:`extract_row` gives the same fields as a tuple (numbers as floats, the agent's name).
Numbers that are absent or not numeric become NaN; booleans count as numbers only for ``reward``. Text is
the ``output_text`` (or ``text``) of message items of ``response.output``; reasoning is the summary /
content text of ``reasoning`` items; tool calls are items whose ``type`` ends in ``_call`` (NeMo Gym's
list: function, tool, MCP, file/web search, computer, code interpreter, shell, custom calls). The text
hash is Python's string hash: equal texts hash equal within one run (forked readers share its seed),
which is all the identical-repeats check needs. Where each number comes from is described once, in
:data:`rewardgym.analysis.record_source.ROW_FIELDS`: :func:`extract_general`, :func:`pack_row` and the
per-layout :func:`layout_record` are all generated from it.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

from rewardgym.analysis.record_source import general_source, layout_source, usual_source
from rewardgym.profile.read.extract import KeyProblem, row_key

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
RECORD = struct.Struct("<qqddddd?qqqdbQ?q?")
"""One row's :data:`FIELDS` packed (the agent as an index into :func:`agent_names`): packing the values
straight from the parsed row costs less than a tuple of them, and a chunk's records joined are its table
(see :data:`rewardgym.analysis.scan.RECORD_DTYPE`) without any conversion."""
_pack = RECORD.pack
_AGENT = FIELDS.index("agent")
AGENT_INDEX: dict[str, int] = {}
_AGENT_NAMES: list[str] = []
NAN = math.nan
HASH_MASK = (1 << 64) - 1
_ABSENT = object()


def number(value: Any) -> float:
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


def key_problem(row: dict[str, Any]) -> str:
    """What is wrong with the key of a row whose indices do not fit 64 bits (the profile's words)."""
    key = row_key(row)
    return key.message if isinstance(key, KeyProblem) else "an index is out of range"


def agent_index(name: Any) -> int:
    """The index of agent name ``name`` in this process's table (-1: not a name), added when new."""
    if type(name) is not str:
        return -1
    index = AGENT_INDEX.get(name)
    if index is None:
        index = AGENT_INDEX[name] = len(_AGENT_NAMES)
        _AGENT_NAMES.append(name)
    return index


def agent_names() -> list[str]:
    """This process's agent-name table so far (a copy): the names the records' agent indices point at."""
    return list(_AGENT_NAMES)


_NAMESPACE: dict[str, Any] = {
    "key_problem": key_problem,
    "struct_error": struct.error,
    "pack": _pack,
    "NAN": NAN,
    "ABSENT": _ABSENT,
    "MASK": HASH_MASK,
    "LENGTH_REASONS": LENGTH_REASONS,
    "number": number,
    "output_texts": _texts,
    "agent_index": agent_index,
    "AGENTS": AGENT_INDEX,
}
"""What the generated record functions refer to (:mod:`rewardgym.analysis.record_source`)."""


def _compile(source: str, name: str | None = None) -> Callable[..., bytes | str]:
    namespace = dict(_NAMESPACE)
    exec(source, namespace)  # the source holds no value of any row: only local names and constants
    function: Callable[..., bytes | str] = namespace["record"]
    if name is not None:
        # Named as what it is here: the profile's readers pickle their row hook (by module and name) to
        # send it to their workers.
        function.__module__, function.__name__, function.__qualname__ = __name__, name, name
    return function


extract_general: Callable[[dict[str, Any]], bytes | str] = _compile(general_source(), "extract_general")
""":func:`pack_row` for a row of any shape: every rule of :data:`rewardgym.analysis.record_source.ROW_FIELDS`
checked as it goes (:func:`rewardgym.analysis.record_source.general_source`)."""
_NAMESPACE["extract_any"] = extract_general

pack_row: Callable[[dict[str, Any]], bytes | str] = _compile(usual_source(), "pack_row")
"""The analysis fields of one rollout row as one :data:`RECORD`, or what is wrong with its key: the usual
row read fast (:func:`rewardgym.analysis.record_source.usual_source`), any other by
:func:`extract_general` — both generated from one description of the row's fields."""


def layout_record(row: dict[str, Any], usage: dict[str, Any] | None) -> Callable[..., bytes | str] | None:
    """:func:`pack_row` specialised for ``row``'s layout, called with its values unpacked — the
    :class:`~rewardgym.profile.read.chunks.RowHook`'s ``layout`` (see
    :func:`rewardgym.analysis.record_source.layout_source`); None: not worth it for this layout."""
    source = layout_source(row, usage)
    return None if source is None else _compile(source)


def extract_row(row: dict[str, Any]) -> Row | str:
    """The analysis fields of one rollout row as a tuple (:data:`FIELDS`: numbers as floats, the agent's
    name), or what is wrong with its key."""
    record = pack_row(row)
    if isinstance(record, str):
        return record
    fields = RECORD.unpack(record)
    agent = fields[_AGENT]
    named = _AGENT_NAMES[agent] if agent >= 0 else None
    row_fields: Row = (*fields[:_AGENT], named, *fields[_AGENT + 1 :])
    return row_fields
