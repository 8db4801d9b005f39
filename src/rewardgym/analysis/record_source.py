"""One description of what the analysis reads from a rollout row, and the three record functions made from it.

:data:`ROW_FIELDS` says, once, where each value of a row's :data:`~rewardgym.analysis.extract.RECORD` comes
from and what counts (``reward``: a number or a boolean at the top; the token counts: the first of their
keys present in ``response.usage`` counts, even when it is not a number — then NaN; the cap: the
response's, else the request's; the answer, the mask, the agent, ``ng_perf``'s turns). Every record
function is Python source generated from it, compiled by :mod:`rewardgym.analysis.extract` in its
namespace, so the three read a row by the same rules by construction:

- :func:`general_source`: ``record(row)`` for a row of any shape, every rule checked as it goes (what the
  others hand a row back to, as ``extract_any``);
- :func:`usual_source`: ``record(row)`` that checks what the usual row has (integer indices, a ``response``
  object whose ``usage`` has integer ``input_tokens``, ``output_tokens``, ``total_tokens``) and hands any
  other row to the general path;
- :func:`layout_source` ``(row, usage)``: ``record(row, *values, *usage_values)`` for rows of ``row``'s
  layout only (the same keys in the same order with the same value types, and ``usage``'s, its non-empty
  ``response.usage``; None: it has none), which the profile's compiled reader has already checked and
  unpacked: what a rule can decide from the layout (which token key counts, the reward's, the answer's and
  the mask's types, whether there is a request cap, an agent, an ``ng_perf``) is decided once, in the
  source; None when the layout is not worth it (no ``response`` object, non-integer indices).

The fast two share :data:`_BODY`: the response's usual shape (one message of one text part — any other
hands the row to the general path, whose :data:`_GENERAL_OUTPUT` walks every output item), its status and
cap, and the packing. An index beyond 64 bits fails the packing: every function then returns the key's
problem (``key_problem``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rewardgym.protocol.keys import ROLLOUT_INDEX, TASK_INDEX

_NUMBER = (int, float)
_REWARD = (int, float, bool)


@dataclass(frozen=True)
class Number:
    """A number found under the first of ``keys`` present in the object ``source`` (``row``,
    ``response.usage``, ``response``, the request ``params``, ``perf``); NaN when that value is not a
    number (a boolean counts only with ``booleans``) or no key is present. ``usual_int``: the usual row
    holds an integer there (the usual path hands any other row to the general one)."""

    name: str
    source: str
    keys: tuple[str, ...]
    booleans: bool = False
    usual_int: bool = False

    def test(self, value: str, negate: bool = False) -> str:
        kinds = ("float", "int", "bool") if self.booleans else ("int", "float")
        if negate:
            return " and ".join(f"type({value}) is not {kind}" for kind in kinds)
        return " or ".join(f"type({value}) is {kind}" for kind in kinds)

    def first_present(self, source: str, indent: str) -> str:
        """Statements leaving the first present key's value in ``value`` (the last key: ``.get``)."""
        *firsts, last = self.keys
        if not firsts:
            return f"{indent}value = {source}.get({last!r})"
        lines = [f"{indent}value = {source}.get({firsts[0]!r}, ABSENT)"]
        for key in [*firsts[1:], last]:
            tail = ", ABSENT" if key != last else ""
            lines += [f"{indent}if value is ABSENT:", f"{indent}    value = {source}.get({key!r}{tail})"]
        return "\n".join(lines)

    def general(self, indent: str) -> str:
        """Statements that set ``name`` to ``float(value)`` when the rule's value is a number (keep the
        name's NaN otherwise): the general path."""
        return (
            f"{self.first_present(self.source, indent)}\n"
            f"{indent}if {self.test('value')}:\n{indent}    {self.name} = float(value)"
        )

    def layout(self, values: dict[str, Any], local: dict[str, str]) -> str:
        """The value's expression for one layout of ``source``: its local, or ``NAN`` (decided once)."""
        for key in self.keys:
            if key in values:
                return local[key] if type(values[key]) in (_REWARD if self.booleans else _NUMBER) else "NAN"
        return "NAN"


REWARD = Number("reward", "row", ("reward",), booleans=True)
TOKENS_IN = Number("tokens_in", "usage", ("input_tokens", "prompt_tokens"), usual_int=True)
TOKENS_OUT = Number("tokens_out", "usage", ("output_tokens", "completion_tokens"), usual_int=True)
TOTAL = Number("total", "usage", ("total_tokens",), usual_int=True)
"""Without a number here: ``tokens_in + tokens_out``."""
RESPONSE_CAP = Number("cap", "response", ("max_output_tokens",))
REQUEST_CAP = Number("cap", "params", ("max_output_tokens", "max_tokens"))
"""The cap when the response has none."""
TURNS = Number("turns", "perf", ("num_turns",))
ANSWER_KEY = "extracted_answer"
"""-1 without the key; 0 when it is null or blank text; 1 otherwise."""
MASK_KEY = "mask_sample"
"""Packed as its truth value; False without the key."""
AGENT = ("agent_ref", "name")
"""The agent's name (an index into the process's name table; -1 when not a string)."""
ROW_FIELDS = (REWARD, TOKENS_IN, TOKENS_OUT, TOTAL, RESPONSE_CAP, REQUEST_CAP, TURNS)
"""The numbers of the description (the indices, the answer, the mask and the agent are the constants
above; the text, reasoning and tool calls come from ``response.output``)."""

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
    cap = response.get({cap_key!r})
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

_REQUEST_CAP = """        value = {params}.get({first!r}, ABSENT)
        if value is ABSENT:
            value = {params}.get({second!r})
        if type(value) is int or type(value) is float:
            cap = value"""

_AGENT_LOOKUP = """    name = {agent_ref}.get({name!r})
    agent = AGENTS.get(name) if type(name) is str else -1
    if agent is None:
        agent = agent_index(name)"""

_ANSWER = f"""    if {ANSWER_KEY!r} in row:
        answer = row[{ANSWER_KEY!r}]
        extracted = 0 if answer is None or (type(answer) is str and not answer.strip()) else 1
    else:
        extracted = -1"""


def _usual_tokens() -> str:
    """The usual row's counts: its rules' first keys, integers (else the general path)."""
    rules = [rule for rule in ROW_FIELDS if rule.usual_int]
    names = [f"    {rule.name} = {rule.source}.get({rule.keys[0]!r})" for rule in rules]
    test = " or ".join(f"type({rule.name}) is not int" for rule in rules)
    return "\n".join([*names, f"    if {test}:", "        return extract_any(row)"])


_USUAL_PROLOGUE = f"""    task = row.get({TASK_INDEX!r})
    rollout = row.get({ROLLOUT_INDEX!r})
    response = row.get("response")
    if type(task) is not int or type(rollout) is not int or type(response) is not dict:
        return extract_any(row)
    usage = response.get("usage")
    if type(usage) is not dict:
        return extract_any(row)
{_usual_tokens()}
    reward = row.get({REWARD.keys[0]!r})
    if {REWARD.test("reward", negate=True)}:
        reward = NAN
    params = row.get("responses_create_params")
    perf = row.get("ng_perf")
    agent_ref = row.get({AGENT[0]!r})
{_ANSWER}"""


def _indented(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line if line else line for line in text.splitlines())


def _request_cap(params: str) -> str:
    first, second = REQUEST_CAP.keys
    return _REQUEST_CAP.format(params=params, first=first, second=second)


def usual_source() -> str:
    """The source of ``record(row)`` for a row of any layout (see module doc)."""
    return _BODY.format(
        arguments="",
        prologue=_USUAL_PROLOGUE,
        cap_key=RESPONSE_CAP.keys[0],
        request_cap="        if type(params) is dict:\n" + _indented(_request_cap("params"), 4),
        agent_lookup="    agent = -1\n    if type(agent_ref) is dict:\n"
        + _indented(_AGENT_LOOKUP.format(agent_ref="agent_ref", name=AGENT[1]), 4),
        task="task",
        rollout="rollout",
        reward="reward",
        tokens_in="tokens_in",
        tokens_out="tokens_out",
        total="total",
        turns=f"number(perf.get({TURNS.keys[0]!r})) if type(perf) is dict else NAN",
        extracted="extracted",
        masked=f"row.get({MASK_KEY!r})",
    )


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
        tokens_in = TOKENS_IN.layout(usage, usage_local)
        tokens_out = TOKENS_OUT.layout(usage, usage_local)
        total = TOTAL.layout(usage, usage_local)
    if total == "NAN" and "NAN" not in (tokens_in, tokens_out):
        total = f"(float({tokens_in}) + float({tokens_out}))"
    extracted = "-1"
    if ANSWER_KEY in row:
        answer = row[ANSWER_KEY]
        if answer is None:
            extracted = "0"
        elif type(answer) is str:
            extracted = f"(0 if not {local[ANSWER_KEY]}.strip() else 1)"
        else:
            extracted = "1"
    has_params = type(row.get("responses_create_params")) is dict
    has_agent = type(row.get(AGENT[0])) is dict
    return _BODY.format(
        arguments=", ".join([*local.values(), *usage_local.values()]),
        prologue=f"    response = {local['response']}",
        cap_key=RESPONSE_CAP.keys[0],
        request_cap=_request_cap(local["responses_create_params"]) if has_params else "",
        # the agent name's index looked up here: a call would cost as much as the look-up
        agent_lookup=_AGENT_LOOKUP.format(agent_ref=local[AGENT[0]], name=AGENT[1])
        if has_agent
        else "    agent = -1",
        task=local[TASK_INDEX],
        rollout=local[ROLLOUT_INDEX],
        reward=REWARD.layout(row, local),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        total=total,
        turns=f"number({local['ng_perf']}.get({TURNS.keys[0]!r}))"
        if type(row.get("ng_perf")) is dict
        else "NAN",
        extracted=extracted,
        masked=local[MASK_KEY] if MASK_KEY in row else "False",
    )


_GENERAL_OUTPUT = """        output = response.get("output")
        if type(output) is list:
            texts = []
            reasoning = []
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
                calls = output_texts(output, texts, reasoning)
            text = texts[0] if len(texts) == 1 else "".join(texts)
            if text and (text[0].isspace() or text[-1].isspace()):  # strip only when needed (a copy)
                text = text.strip()
            if reasoning:  # no generator for the common answer without reasoning
                reasoning_chars = sum(len(r.strip()) for r in reasoning)"""


def general_source() -> str:
    """The source of ``record(row)`` for a row of any shape, every rule checked as it goes (module doc)."""
    index_checks = "\n".join(
        f"    {name} = row.get({key!r})\n"
        f"    if type({name}) is not int:\n"
        f"        return {f'missing {key!r}'!r} if {name} is None else {f'{key!r} must be an integer'!r}"
        for name, key in (("task", TASK_INDEX), ("rollout", ROLLOUT_INDEX))
    )
    return f"""
def record(row):
{index_checks}
    reward = tokens_in = tokens_out = total = cap = turns = NAN
{REWARD.general("    ")}
    incomplete = False
    calls = 0
    text = ""
    reasoning_chars = 0
    response = row.get("response")
    if type(response) is dict:
        usage = response.get("usage")
        if type(usage) is dict:  # the first present key counts, even when it is null
{TOKENS_IN.general("            ")}
{TOKENS_OUT.general("            ")}
{TOTAL.general("            ")}
{RESPONSE_CAP.general("        ")}
        details = response.get("incomplete_details")
        incomplete = response.get("status") == "incomplete" or (
            type(details) is dict and details.get("reason") in LENGTH_REASONS
        )
{_GENERAL_OUTPUT}
    if total != total:  # no total_tokens
        total = tokens_in + tokens_out
    if cap != cap:  # no cap on the response: the request's
        params = row.get("responses_create_params")
        if type(params) is dict:
{REQUEST_CAP.general("            ")}
    perf = row.get("ng_perf")
    if type(perf) is dict:
{TURNS.general("        ")}
    agent_ref = row.get({AGENT[0]!r})
    agent = agent_ref.get({AGENT[1]!r}) if type(agent_ref) is dict else None
{_ANSWER}
    try:
        return pack(
            task, rollout, reward, tokens_in, tokens_out, total, cap, incomplete, len(text), reasoning_chars,
            calls, turns, extracted, (hash(text) & MASK) or 1 if text else 0, row.get({MASK_KEY!r}),
            agent_index(agent) if type(agent) is str else -1, type(response) is dict,
        )
    except struct_error:  # an index beyond 64 bits
        return key_problem(row)
"""
