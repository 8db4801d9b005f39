"""The source of the analysis' record functions: the usual rollout row read fast, in one template.

Contract: :func:`usual_source` and :func:`layout_source` return the Python source of a function
``record`` (compiled by :mod:`rewardgym.analysis.extract` in its namespace) that returns the row's
:data:`~rewardgym.analysis.extract.RECORD` — or, for a row that is not the usual one, hands it to the
general path (``extract_any``), which applies every rule of the extraction:

- ``usual_source()``: ``record(row)`` for a row of any layout; it checks what the usual row has
  (integer indices, a ``response`` object whose ``usage`` has integer ``input_tokens``,
  ``output_tokens``, ``total_tokens``) and reads the rest as the general path does;
- ``layout_source(row, usage)``: ``record(row, *values, *usage_values)`` for rows of ``row``'s layout
  only (the same keys in the same order with the same value types, and ``usage``'s, its non-empty
  ``response.usage``; None: it has none), which the profile's compiled reader has already checked and
  unpacked: which token key counts, the reward's, the answer's and the mask's types, whether there is a
  request cap, an agent, an ``ng_perf`` are decided once, in the source; None when the layout is not
  worth it (no ``response`` object, non-integer indices).

Both share :data:`_BODY`: the response's usual shape (one message of one text part), its status and cap,
and the packing. An index beyond 64 bits fails the packing: the function then returns the key's problem
(``key_problem``), as the general path does.
"""

from __future__ import annotations

from typing import Any

from rewardgym.protocol.keys import ROLLOUT_INDEX, TASK_INDEX

_NUMBER = (int, float)
_REWARD = (int, float, bool)

_BODY = """
def record(row, {arguments}):
{prologue}
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
        cap = NAN
{request_cap}
    details = response.get("incomplete_details")
    if text and (text[0].isspace() or text[-1].isspace()):
        text = text.strip()
{agent_lookup}
    try:
        return pack(
            {task}, {rollout}, {reward}, {tokens_in}, {tokens_out}, {total}, cap,
            response.get("status") == "incomplete"
            or (type(details) is dict and details.get("reason") in LENGTH_REASONS),
            len(text), 0, 0, {turns}, {extracted}, (hash(text) & MASK) or 1 if text else 0, {masked},
            agent, True,
        )
    except struct_error:  # an index beyond 64 bits
        return key_problem(row)
"""

_REQUEST_CAP = """        value = {params}.get("max_output_tokens", ABSENT)
        if value is ABSENT:
            value = {params}.get("max_tokens")
        if type(value) is int or type(value) is float:
            cap = value"""

_AGENT_LOOKUP = """    name = {agent_ref}.get("name")
    agent = AGENTS.get(name) if type(name) is str else -1
    if agent is None:
        agent = agent_index(name)"""

_USUAL_PROLOGUE = f"""    task = row.get({TASK_INDEX!r})
    rollout = row.get({ROLLOUT_INDEX!r})
    response = row.get("response")
    if type(task) is not int or type(rollout) is not int or type(response) is not dict:
        return extract_any(row)
    usage = response.get("usage")
    if type(usage) is not dict:
        return extract_any(row)
    tokens_in = usage.get("input_tokens")
    tokens_out = usage.get("output_tokens")
    total = usage.get("total_tokens")
    if type(tokens_in) is not int or type(tokens_out) is not int or type(total) is not int:
        return extract_any(row)
    reward = row.get("reward")
    if type(reward) is not float and type(reward) is not int and type(reward) is not bool:
        reward = NAN
    params = row.get("responses_create_params")
    perf = row.get("ng_perf")
    agent_ref = row.get("agent_ref")
    if "extracted_answer" in row:
        answer = row["extracted_answer"]
        extracted = 0 if answer is None or (type(answer) is str and not answer.strip()) else 1
    else:
        extracted = -1"""


def _indented(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line if line else line for line in text.splitlines())


def usual_source() -> str:
    """The source of ``record(row)`` for a row of any layout (see module doc)."""
    return _BODY.format(
        arguments="",
        prologue=_USUAL_PROLOGUE,
        request_cap="        if type(params) is dict:\n" + _indented(_REQUEST_CAP.format(params="params"), 4),
        agent_lookup="    agent = -1\n    if type(agent_ref) is dict:\n"
        + _indented(_AGENT_LOOKUP.format(agent_ref="agent_ref"), 4),
        task="task",
        rollout="rollout",
        reward="reward",
        tokens_in="tokens_in",
        tokens_out="tokens_out",
        total="total",
        turns="number(perf.get('num_turns')) if type(perf) is dict else NAN",
        extracted="extracted",
        masked='row.get("mask_sample")',
    )


def _first_count(usage: dict[str, Any], local: dict[str, str], names: tuple[str, str]) -> str:
    """The token count as the general path takes it: the first of ``names`` present counts, even when it
    is not a number (then NaN)."""
    for name in names:
        if name in usage:
            return local[name] if type(usage[name]) in _NUMBER else "NAN"
    return "NAN"


def layout_source(row: dict[str, Any], usage: dict[str, Any] | None) -> str | None:
    """The source of ``record(row, *values, *usage_values)`` for ``row``'s layout (see module doc)."""
    if type(row.get(TASK_INDEX)) is not int or type(row.get(ROLLOUT_INDEX)) is not int:
        return None
    if type(row.get("response")) is not dict:
        return None  # rare: the general path
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
    extracted = "-1"
    if "extracted_answer" in row:
        answer = row["extracted_answer"]
        if answer is None:
            extracted = "0"
        elif type(answer) is str:
            extracted = f"(0 if not {local['extracted_answer']}.strip() else 1)"
        else:
            extracted = "1"
    has_params = type(row.get("responses_create_params")) is dict
    has_agent = type(row.get("agent_ref")) is dict
    return _BODY.format(
        arguments=", ".join([*local.values(), *usage_local.values()]),
        prologue=f"    response = {local['response']}",
        request_cap=_REQUEST_CAP.format(params=local["responses_create_params"]) if has_params else "",
        # the agent name's index looked up here: a call would cost as much as the look-up
        agent_lookup=_AGENT_LOOKUP.format(agent_ref=local["agent_ref"]) if has_agent else "    agent = -1",
        task=local[TASK_INDEX],
        rollout=local[ROLLOUT_INDEX],
        reward=local["reward"] if "reward" in row and type(row["reward"]) in _REWARD else "NAN",
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        total=total,
        turns=f"number({local['ng_perf']}.get('num_turns'))" if type(row.get("ng_perf")) is dict else "NAN",
        extracted=extracted,
        masked=local["mask_sample"] if "mask_sample" in row else "False",
    )
