"""Replaying recorded rollouts against an environment: does it still give the rewards that were recorded?

Contract:

- :func:`match_recorded` pairs each recorded rollout with the dataset row it came from, by a key (default: the
  row's user messages); a key that does not identify rows, or a rollout without a row, is an error — never a
  guess.
- :func:`replay_recorded_rollouts` posts ``row + {"response": recorded response}`` to the environment's
  ``/verify`` over real HTTP and compares the chosen fields of the answer with the recording.
  ``known_differences`` maps a row index to the values this environment gives *on purpose* instead (a
  documented divergence, e.g. a grading rule the recording predates). Every mismatch is collected, then
  :class:`ReplayMismatch` lists them all in one table; the outcomes are returned when all match.
- :func:`replay_through_agent` runs each recorded episode through an agent whose model is a
  :class:`~rewardgym.testing.scripted_model.OpenAIStub` replaying the recorded model turns, so tools, sessions
  and the agent loop are exercised too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from rewardgym.testing.client import call
from rewardgym.testing.scripted_model import OpenAIStub

COLLECTOR_STAMPS = frozenset({"agent_ref"})
"""Keys the collector adds to a rollout (besides every ``_ng_*`` key); ``/verify`` never returns them."""


class ReplayMismatch(AssertionError):
    """One or more replayed rollouts did not reproduce their recording (the message lists each)."""


@dataclass(frozen=True)
class Recorded:
    """A recorded rollout with the dataset row (and its index) it was collected from."""

    index: int
    row: dict[str, Any]
    rollout: dict[str, Any]


@dataclass(frozen=True)
class Outcome:
    """What one replay gave: the environment's answer and the values it was expected to give."""

    recorded: Recorded
    answer: dict[str, Any]
    expected: dict[str, Any]


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file (blank lines skipped)."""
    lines = Path(path).read_bytes().splitlines()
    return [orjson.loads(line) for line in lines if line.strip()]


def user_text(row: Mapping[str, Any]) -> str:
    """The concatenated user messages of a row's ``responses_create_params.input`` (the default match key)."""
    items = row.get("responses_create_params", {}).get("input", [])
    if isinstance(items, str):
        return items
    texts = []
    for item in items:
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts.append("".join(str(p.get("text", "")) for p in content if isinstance(p, dict)))
    return "\n".join(texts)


def match_recorded(
    rows: Sequence[dict[str, Any]],
    rollouts: Iterable[dict[str, Any]],
    key: Callable[[Mapping[str, Any]], Any] = user_text,
) -> list[Recorded]:
    """Each rollout paired with its row (sorted by row index, then recording order)."""
    by_key: dict[Any, int] = {}
    for index, row in enumerate(rows):
        value = key(row)
        if value in by_key:
            raise ValueError(f"rows {by_key[value]} and {index} have the same match key; choose another key")
        by_key[value] = index
    matched = []
    for number, rollout in enumerate(rollouts):
        found = by_key.get(key(rollout))
        if found is None:
            raise ValueError(f"recorded rollout {number} matches no row")
        matched.append(Recorded(found, rows[found], rollout))
    return sorted(matched, key=lambda r: r.index)


def recorded_examples(data_dir: str | Path) -> list[Recorded]:
    """An environment folder's recordings: ``data_dir/example_rollouts.jsonl`` matched to the rows of
    ``data_dir/example.jsonl`` by their user messages (the layout of every built-in environment)."""
    folder = Path(data_dir)
    return match_recorded(read_jsonl(folder / "example.jsonl"), read_jsonl(folder / "example_rollouts.jsonl"))


def verify_keys(rollout: Mapping[str, Any]) -> set[str]:
    """The keys ``/verify`` itself returned in a recorded rollout (the collector's stamps removed)."""
    return {k for k in rollout if not k.startswith("_ng_") and k not in COLLECTOR_STAMPS}


def _check(
    outcomes: list[Outcome], fields: Sequence[str], check_keys: bool, problems: list[str], what: str
) -> None:
    for outcome in outcomes:
        answer, recorded = outcome.answer, outcome.recorded.rollout
        if check_keys and set(answer) != verify_keys(recorded):
            missing, extra = verify_keys(recorded) - set(answer), set(answer) - verify_keys(recorded)
            problems.append(f"row {outcome.recorded.index}: keys differ (missing {missing}, extra {extra})")
        for name in fields:
            if answer.get(name) != outcome.expected.get(name):
                problems.append(
                    f"row {outcome.recorded.index}: {name} = {answer.get(name)!r}, "
                    f"{what} {outcome.expected.get(name)!r}"
                )


def _expected(
    item: Recorded, fields: Sequence[str], known: Mapping[int, Mapping[str, Any]]
) -> dict[str, Any]:
    return {name: item.rollout.get(name) for name in fields} | dict(known.get(item.index, {}))


def replay_recorded_rollouts(
    url: str,
    recorded: Sequence[Recorded],
    *,
    fields: Sequence[str] = ("reward",),
    known_differences: Mapping[int, Mapping[str, Any]] | None = None,
    check_keys: bool = True,
    headers: Mapping[str, str] | None = None,
) -> list[Outcome]:
    """Verify each recording again at the environment ``url`` (see the module docstring)."""
    known = known_differences or {}
    outcomes, problems = [], []
    for item in recorded:
        body = item.row | {"response": item.rollout["response"]}
        reply = call(url, "POST", "/verify", json=body, headers=dict(headers or {}))
        if reply.status != 200:
            problems.append(f"row {item.index}: HTTP {reply.status}: {reply.body[:300]!r}")
            continue
        outcomes.append(Outcome(item, reply.json(), _expected(item, fields, known)))
    _check(outcomes, fields, check_keys, problems, "recorded")
    if problems:
        raise ReplayMismatch(f"{len(problems)} replay mismatch(es) at {url}:\n  " + "\n  ".join(problems))
    return outcomes


def model_turns(output: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A recorded response's output split into the model's turns (the items between tool outputs), as
    script entries for :class:`~rewardgym.testing.scripted_model.OpenAIStub`."""
    turns: list[dict[str, Any]] = []
    current: list[dict[str, Any]] = []
    for item in output:
        if item["type"] == "function_call_output":
            if current:
                turns.append({"output": current})
                current = []
        else:
            current.append(dict(item))
    return [*turns, {"output": current}] if current else turns


def _episode_differences(answer: Mapping[str, Any], rollout: Mapping[str, Any]) -> list[str]:
    """How the replayed episode's output differs from the recording: the item types in order, and each tool
    output (same ``call_id``, JSON-equal ``output``)."""
    ours, theirs = answer["response"]["output"], rollout["response"]["output"]
    if [i["type"] for i in ours] != [i["type"] for i in theirs]:
        return [f"output item types {[i['type'] for i in ours]} != recorded {[i['type'] for i in theirs]}"]
    found = []
    for mine, recorded in zip(ours, theirs, strict=True):
        if recorded["type"] != "function_call_output":
            continue
        if mine["call_id"] != recorded["call_id"]:
            found.append(f"tool output call_id {mine['call_id']!r} != recorded {recorded['call_id']!r}")
        elif _as_json(mine["output"]) != _as_json(recorded["output"]):
            found.append(f"tool output of {recorded['call_id']!r} differs: {mine['output'][:200]!r}")
    return found


def _as_json(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def replay_through_agent(
    agent_url: str,
    model: OpenAIStub,
    recorded: Sequence[Recorded],
    *,
    fields: Sequence[str] = ("reward",),
    known_differences: Mapping[int, Mapping[str, Any]] | None = None,
) -> list[Outcome]:
    """Run each recorded episode through the agent at ``agent_url`` with ``model`` replaying the recorded
    model turns: every turn must be used, the output items must have the recorded types in order, each tool
    output must equal the recorded one, and the chosen fields must match (see the module docstring)."""
    known = known_differences or {}
    outcomes, problems = [], []
    for item in recorded:
        model.state.mode = "script"
        model.state.script = model_turns(item.rollout["response"]["output"])
        reply = call(agent_url, "POST", "/run", json=item.row)
        if reply.status != 200:
            problems.append(f"row {item.index}: HTTP {reply.status}: {reply.body[:300]!r}")
            continue
        if model.state.script:
            problems.append(f"row {item.index}: {len(model.state.script)} recorded model turn(s) not used")
        answer = reply.json()
        problems.extend(f"row {item.index}: {p}" for p in _episode_differences(answer, item.rollout))
        outcomes.append(Outcome(item, answer, _expected(item, fields, known)))
    _check(outcomes, fields, False, problems, "recorded")
    if problems:
        raise ReplayMismatch(
            f"{len(problems)} replay mismatch(es) via {agent_url}:\n  " + "\n  ".join(problems)
        )
    return outcomes
