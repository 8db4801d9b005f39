"""Expansion of input rows into materialized rollout requests (identical to NeMo Gym's, byte for byte).

Contract (users diff these files against NeMo Gym's):
- Rows come out in "aabbcc" order: each input row's repeats are consecutive.
- ``_ng_task_index`` already present in a row is kept; otherwise it is assigned per *distinct raw input
  line*: byte-identical lines share one task index, and their rollout numbers continue.
- ``_ng_rollout_index`` counts per task from 0.
- ``agent_name`` (``--agent``) sets every row's ``agent_ref`` to ``{"name": agent_name}`` (in place when the
  row had one), as NeMo Gym 0.7.0 does; rows that named another agent are counted and reported through
  ``warn`` once the file is read. With ``agent_fill_missing`` it only fills a missing ``agent_ref``.
- ``agent_map`` (``++agent_map={row agent: served agent}``) then sends a row whose ``agent_ref.name`` is a
  key of the map to the mapped agent: its ``agent_ref.name`` is replaced (other ``agent_ref`` keys kept), so
  a dataset written for one stack's agent names runs on another's.
- ``num_repeats`` is an int, or a mapping from agent name to int with an optional ``_default``.
- ``add_seed`` puts ``"seed": <rollout index>`` into ``responses_create_params.metadata.extra_body``
  (a JSON string, merged with one already there, written like Python's ``json.dumps``: ``{"seed": 0}``).
- ``create_params_overrides`` (``--temperature``…) are merged into every row's ``responses_create_params``.
- ``prompt_config`` sets ``responses_create_params.input`` (after the parameters the row already has); a
  row whose ``input`` is non-empty is refused.
- ``interleave`` reorders the rows "abcabc": a stable sort by ``_ng_rollout_index`` (every rollout 0 in
  input order, then every rollout 1…). Unlike the default order this holds the rows in memory.
- Key order of a row: its original keys, then ``agent_ref``, ``_ng_task_index``, ``_ng_rollout_index``.
Errors name the input file and line.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rewardgym.errors import DataError, UsageError
from rewardgym.io.inputs import refuse_special_input
from rewardgym.io.jsonl import parse_line
from rewardgym.protocol import keys

RepeatSpec = int | Mapping[str, int]


@dataclass(frozen=True)
class PromptConfig:
    """A ``--prompt-config`` template: ``user`` (required) and ``system`` rendered with the row's fields."""

    user: str
    system: str | None = None


@dataclass(frozen=True)
class MaterializeOptions:
    """How input rows become rollout requests."""

    num_repeats: RepeatSpec = 1
    """Repeats per row: an int, or ``{agent_name: n, "_default": n}``."""
    agent_name: str | None = None
    """The agent of every row (``--agent``); only of rows without one with ``agent_fill_missing``."""
    agent_fill_missing: bool = False
    """``--agent`` fills a missing ``agent_ref`` only and keeps the rows' own (``--agent-fill-missing``)."""
    limit: int | None = None
    """Read only the first N input lines (``--limit``; 0 or None means all)."""
    add_seed: bool = False
    """Put the rollout index as ``seed`` into ``metadata.extra_body`` (``--num-repeats-add-seed``)."""
    create_params_overrides: Mapping[str, Any] = field(default_factory=dict)
    """Merged into every row's ``responses_create_params`` (``--temperature``, ``--top-p``…)."""
    prompt_config: PromptConfig | None = None
    interleave: bool = False
    """Order the rows "abcabc" (by rollout index) instead of "aabbcc" (``--interleave-repeats``)."""
    agent_map: Mapping[str, str] = field(default_factory=dict)
    """Row agent name → the agent that runs it (``++agent_map``), applied after ``agent_name``."""


MAX_REPEATS = 10_000
"""Rollouts per task at most: at 10,000 a pass rate's standard error is below 0.5 points; more repeats
only cost time and disk (``--num-repeats 10000000`` on 20 rows would write 1.4 GB of inputs)."""


def validate_repeats(spec: RepeatSpec) -> None:
    """Reject repeat counts below 1 (``--num-repeats 0``) or above :data:`MAX_REPEATS`, and malformed
    mappings."""
    if isinstance(spec, bool) or not isinstance(spec, int | Mapping):
        raise UsageError(
            f"num_repeats must be an integer or a mapping of agent name to integer, got {spec!r}"
        )
    values = spec.items() if isinstance(spec, Mapping) else [("num_repeats", spec)]
    for name, value in values:
        where = "num_repeats" if name == "num_repeats" else f"num_repeats.{name}"
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UsageError(f"{where} must be an integer >= 1, got {value!r}")
        if value > MAX_REPEATS:
            raise UsageError(
                f"{where} {value:,}: at most {MAX_REPEATS:,} rollouts per task (a pass rate's standard "
                "error is below 0.5 points there; more repeats only cost time and disk)"
            )


def _repeats_for(spec: RepeatSpec, agent: str | None) -> int | None:
    if isinstance(spec, int):
        return spec
    if agent is not None and agent in spec:
        return spec[agent]
    return spec.get("_default")


def render_prompt(row: dict[str, Any], prompt: PromptConfig, where: str) -> None:
    """Fill ``responses_create_params.input`` of ``row`` from ``prompt`` (module docstring)."""
    params = row.get(keys.RESPONSES_CREATE_PARAMS)
    if isinstance(params, dict) and params.get("input"):
        raise DataError(
            f"{where}: row already has responses_create_params.input; --prompt-config would replace it"
        )
    try:
        messages = []
        if prompt.system is not None:
            messages.append({"role": "system", "content": prompt.system.format_map(row)})
        messages.append({"role": "user", "content": prompt.user.format_map(row)})
    except KeyError as exc:
        raise DataError(
            f"{where}: --prompt-config names field {exc.args[0]!r}, which the row does not have"
        ) from None
    # After the row's own parameters (an empty ``input`` keeps its place), as NeMo Gym writes it.
    params = dict(params) if isinstance(params, dict) else {}
    params["input"] = messages
    row[keys.RESPONSES_CREATE_PARAMS] = params


def _add_seed(params: dict[str, Any], seed: int, where: str) -> None:
    metadata = params.get("metadata") or {}
    raw = metadata.get("extra_body") or "{}"
    try:
        extra = json.loads(raw)
    except (TypeError, ValueError):
        raise DataError(
            f"{where}: responses_create_params.metadata.extra_body is not a JSON string"
        ) from None
    if not isinstance(extra, dict):
        raise DataError(f"{where}: responses_create_params.metadata.extra_body is not a JSON object")
    extra["seed"] = seed
    # The stdlib's spacing and ASCII escapes ('{"seed": 0}'), byte for byte what NeMo Gym writes.
    params["metadata"] = {**metadata, "extra_body": json.dumps(extra)}


def iter_materialized(
    path: str | os.PathLike[str],
    options: MaterializeOptions,
    warn: Callable[[str], object] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield materialized rows in "aabbcc" order (streaming over the input file), or "abcabc" with
    ``options.interleave``.

    The repeats of one input row share its nested values: treat the yielded rows as read-only.
    ``warn`` receives warnings (``--agent`` replaced agents the rows named) once the file is read.
    """
    rows = _iter_aabbcc(path, options, warn)
    if not options.interleave:
        yield from rows
        return
    # A stable sort by rollout index, bucketed: every rollout 0 in file order, then every rollout 1, …
    buckets: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        buckets.setdefault(row[keys.ROLLOUT_INDEX], []).append(row)
    for index in sorted(buckets):
        yield from buckets.pop(index)


def _iter_aabbcc(
    path: str | os.PathLike[str], options: MaterializeOptions, warn: Callable[[str], object] | None
) -> Iterator[dict[str, Any]]:
    """Rows without an agent, or whose agent has no repeat count, are collected and reported in one error
    after the whole file was read, so a user fixes every row at once."""
    validate_repeats(options.num_repeats)
    replaced: dict[str, int] = {}
    limit = options.limit or None
    # Keyed by a 128-bit digest of the raw line, not the line itself: 10^6 distinct rows stay a few MiB.
    task_of_line: dict[bytes, int] = {}
    next_rollout: dict[int, int] = {}
    rows_without_agent: list[int] = []
    agents_without_repeats: dict[str, int] = {}
    refuse_special_input(path, "--input")
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise DataError(f"Input file not found: '{os.fspath(path)}' (--input)") from None
    except (IsADirectoryError, PermissionError) as exc:
        raise DataError(f"Input file cannot be read: '{os.fspath(path)}' (--input): {exc.strerror}") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if limit is not None and number > limit:
                break
            where = f"{os.fspath(path)}:{number}"
            row = parse_line(raw, path, number)
            if options.prompt_config is not None:
                render_prompt(row, options.prompt_config, where)
            params = row.get(keys.RESPONSES_CREATE_PARAMS)
            if not isinstance(params, dict):
                raise DataError(f"{where}: row has no 'responses_create_params' object")
            if options.agent_name is not None:
                _set_agent(row, options, replaced)
            ref = row.get(keys.AGENT_REF)
            agent = ref.get("name") if isinstance(ref, dict) else None
            if isinstance(agent, str) and agent in options.agent_map:
                agent = options.agent_map[agent]
                row[keys.AGENT_REF] = {**ref, "name": agent} if isinstance(ref, dict) else {"name": agent}
            if not isinstance(agent, str):
                rows_without_agent.append(number)
                continue
            if options.create_params_overrides:
                row[keys.RESPONSES_CREATE_PARAMS] = params | dict(options.create_params_overrides)
            repeats = _repeats_for(options.num_repeats, agent)
            if repeats is None:
                agents_without_repeats.setdefault(agent, number)
                continue
            task = row.get(keys.TASK_INDEX)
            if task is None:
                digest = hashlib.blake2b(raw.rstrip(b"\r\n"), digest_size=16).digest()
                task = task_of_line.setdefault(digest, len(task_of_line))
            elif isinstance(task, bool) or not isinstance(task, int):
                raise DataError(f"{where}: _ng_task_index must be an integer, got {task!r}")
            if rows_without_agent or agents_without_repeats:
                continue  # keep reading to report every problem at once; emit nothing more
            yield from _expand(row, task, repeats, next_rollout, options, where)
    if replaced and warn is not None:
        pairs = ", ".join(
            f"{old} → {options.agent_name} ({n} row{'s' if n > 1 else ''})"
            for old, n in sorted(replaced.items())
        )
        warn(
            f"--agent {options.agent_name} replaced the agent_ref the rows named ({pairs}), as NeMo Gym "
            "0.7.0 does; pass --agent-fill-missing to set it only on rows without one"
        )
    if rows_without_agent:
        shown = ", ".join(str(n) for n in rows_without_agent[:10])
        more = "" if len(rows_without_agent) <= 10 else f" (and {len(rows_without_agent) - 10} more)"
        raise DataError(
            f"{os.fspath(path)}: {len(rows_without_agent)} row(s) have no agent_ref.name "
            f"(lines {shown}{more}); pass --agent NAME to set a default agent"
        )
    if agents_without_repeats:
        names = ", ".join(f"{name!r} (first at line {line})" for name, line in agents_without_repeats.items())
        raise UsageError(f"num_repeats has no entry for agent(s) {names} and no '_default'")


def _set_agent(row: dict[str, Any], options: MaterializeOptions, replaced: dict[str, int]) -> None:
    ref = row.get(keys.AGENT_REF)
    if options.agent_fill_missing:
        if ref is None:
            row[keys.AGENT_REF] = {"name": options.agent_name}
        return
    old = ref.get("name") if isinstance(ref, dict) else None
    if isinstance(old, str) and old != options.agent_name:
        replaced[old] = replaced.get(old, 0) + 1
    row[keys.AGENT_REF] = {"name": options.agent_name}


def _expand(
    row: dict[str, Any],
    task: int,
    repeats: int,
    next_rollout: dict[int, int],
    options: MaterializeOptions,
    where: str,
) -> Iterator[dict[str, Any]]:
    for _ in range(repeats):
        rollout = next_rollout.get(task, 0)
        next_rollout[task] = rollout + 1
        # Repeats share the row's nested values (they are serialised, not mutated); only the parameters
        # that get a per-repeat seed are copied.
        out = dict(row)
        out[keys.TASK_INDEX] = task
        out[keys.ROLLOUT_INDEX] = rollout
        if options.add_seed:
            params = out[keys.RESPONSES_CREATE_PARAMS] = dict(out[keys.RESPONSES_CREATE_PARAMS])
            _add_seed(params, rollout, where)
        yield out


def repeat_row(row: Mapping[str, Any], rollout: int, *, add_seed: bool, where: str) -> dict[str, Any]:
    """Another repeat of a materialized row: the same request under rollout index ``rollout`` (and, with
    ``add_seed``, that index as its seed) — what materializing with more repeats would have written, used
    by ``--adaptive`` to extend a task."""
    out = dict(row)
    out[keys.ROLLOUT_INDEX] = rollout
    if add_seed:
        params = out[keys.RESPONSES_CREATE_PARAMS] = dict(out[keys.RESPONSES_CREATE_PARAMS])
        _add_seed(params, rollout, where)
    return out
