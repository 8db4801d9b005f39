"""The analysis record of a rollout row, specialised per row layout for the profile's compiled reader.

Contract of :func:`layout_record(row, usage)` (the :class:`~rewardgym.profile.read.chunks.RowHook`'s
``layout``): for the layout of ``row`` — its keys in order and their value types, and ``usage``, the
layout of its non-empty ``response.usage`` (None: it has none) — a function ``f(row, *values,
*usage_values)`` that returns exactly :func:`~rewardgym.analysis.extract.pack_row` ``(row)`` for every row
of that layout; None when the layout is not worth it (no ``response`` object, non-integer indices).

Why: the profile's fast path has already checked every top-level key and type of the row and unpacked
the values, so what :func:`~rewardgym.analysis.extract.pack_row` looks up and checks per row — the
indices, ``reward``, the token counts (and which of ``input_tokens`` / ``prompt_tokens`` counts), the
mask, the extracted answer, the agent, ``ng_perf``, the request's cap — is decided here once per layout,
in the generated source. What a layout does not fix (inside ``response``: the output items, the text,
the status, the response's own cap) is read per row as ``pack_row`` reads it, and a row whose response is
not the usual one message of one text part is handed to ``pack_row``'s general path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardgym.analysis import extract
from rewardgym.analysis.extract import LENGTH_REASONS, ROLLOUT_INDEX, TASK_INDEX

_NUMBER = (int, float)
_REWARD = (int, float, bool)

_SOURCE = """
def record(row, {arguments}):
    response = {response}
    try:
        output = response["output"]
        item = output[0]
        content = item["content"]
        text = content[0]["text"]
    except (KeyError, TypeError, IndexError):
        return extract_any(row)
    if not (
        type(output) is list
        and len(output) == 1
        and type(item) is dict
        and item.get("type") == "message"
        and type(content) is list
        and len(content) == 1
        and type(content[0]) is dict
        and type(text) is str
    ):
        return extract_any(row)
    cap = response.get("max_output_tokens")
    if type(cap) is not int and type(cap) is not float:
{request_cap}
    details = response.get("incomplete_details")
    if text and (text[0].isspace() or text[-1].isspace()):
        text = text.strip()
{agent_lookup}
    return pack(
        {task}, {rollout}, {reward}, {tokens_in}, {tokens_out}, {total}, cap,
        response.get("status") == "incomplete"
        or (type(details) is dict and details.get("reason") in LENGTH_REASONS),
        len(text), 0, 0, {turns}, {extracted}, (hash(text) & MASK) or 1 if text else 0, {masked}, {agent},
        True,
    )
"""

_REQUEST_CAP = """        cap = NAN
        value = {params}.get("max_output_tokens", ABSENT)
        if value is ABSENT:
            value = {params}.get("max_tokens")
        if type(value) is int or type(value) is float:
            cap = value"""


_AGENT_LOOKUP = """    name = {agent_ref}.get("name")
    agent = AGENTS.get(name) if type(name) is str else -1
    if agent is None:
        agent = agent_index(name)"""


def _first_count(usage: dict[str, Any], local: dict[str, str], names: tuple[str, str]) -> str:
    """The token count as ``pack_row`` takes it: the first of ``names`` present counts, even when it is
    not a number (then NaN)."""
    for name in names:
        if name in usage:
            return local[name] if type(usage[name]) in _NUMBER else "NAN"
    return "NAN"


def layout_record(row: dict[str, Any], usage: dict[str, Any] | None) -> Callable[..., Any] | None:
    """The specialised record function of ``row``'s layout (see module doc)."""
    if type(row.get(TASK_INDEX)) is not int or type(row.get(ROLLOUT_INDEX)) is not int:
        return None
    if type(row.get("response")) is not dict:
        return None  # rare: pack_row's general path
    local = {key: f"v{i}" for i, key in enumerate(row)}
    usage_local = {key: f"u{i}" for i, key in enumerate(usage or ())}
    tokens_in = tokens_out = total = "NAN"
    if usage is not None:
        tokens_in = _first_count(usage, usage_local, ("input_tokens", "prompt_tokens"))
        tokens_out = _first_count(usage, usage_local, ("output_tokens", "completion_tokens"))
        if type(usage.get("total_tokens")) in _NUMBER:
            total = usage_local["total_tokens"]
    if total == "NAN" and "NAN" not in (tokens_in, tokens_out):
        total = f"(float({tokens_in}) + float({tokens_out}))"
    params = row.get("responses_create_params")
    agent_lookup = "    agent = -1"
    if type(row.get("agent_ref")) is dict:  # the name's index, looked up here (a call costs as much)
        agent_lookup = _AGENT_LOOKUP.format(agent_ref=local["agent_ref"])
    extracted = "-1"
    if "extracted_answer" in row:
        answer = row["extracted_answer"]
        if answer is None:
            extracted = "0"
        elif type(answer) is str:
            extracted = f"(0 if not {local['extracted_answer']}.strip() else 1)"
        else:
            extracted = "1"
    source = _SOURCE.format(
        arguments=", ".join([*local.values(), *usage_local.values()]),
        response=local["response"],
        request_cap=(
            _REQUEST_CAP.format(params=local["responses_create_params"])
            if type(params) is dict
            else "        cap = NAN"
        ),
        task=local[TASK_INDEX],
        rollout=local[ROLLOUT_INDEX],
        reward=local["reward"] if type(row.get("reward")) in _REWARD and "reward" in row else "NAN",
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        total=total,
        turns=f"number({local['ng_perf']}.get('num_turns'))" if type(row.get("ng_perf")) is dict else "NAN",
        extracted=extracted,
        masked=local["mask_sample"] if "mask_sample" in row else "False",
        agent="agent",
        agent_lookup=agent_lookup,
    )
    namespace: dict[str, Any] = {
        "extract_any": extract.pack_row,
        "pack": extract.RECORD.pack,
        "NAN": extract.NAN,
        "ABSENT": object(),
        "MASK": extract.HASH_MASK,
        "LENGTH_REASONS": LENGTH_REASONS,
        "number": extract.number,
        "agent_index": extract.agent_index,
        "AGENTS": extract.AGENT_INDEX,
    }
    exec(source, namespace)  # the source holds no value of the row: only local names and constants
    function: Callable[..., Any] = namespace["record"]
    return function
