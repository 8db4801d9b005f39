"""Expansion of input rows into materialized rollout requests (identical to NeMo Gym's, byte for byte).

Contract (users diff these files against NeMo Gym's):
- Rows come out in "aabbcc" order: each input row's repeats are consecutive.
- ``_ng_task_index`` already present in a row is kept; otherwise it is assigned per *distinct raw input
  line*: byte-identical lines share one task index, and their rollout numbers continue.
- ``_ng_rollout_index`` counts per task from 0.
- ``agent_name`` (``--agent``) only fills a missing ``agent_ref``; it never overrides a row's own.
- ``num_repeats`` is an int, or a mapping from agent name to int with an optional ``_default``.
- ``add_seed`` puts ``"seed": <rollout index>`` into ``responses_create_params.metadata.extra_body``
  (a JSON string, merged with one already there).
- ``create_params_overrides`` (``--temperature``…) are merged into every row's ``responses_create_params``.
- Key order of a row: its original keys, then ``agent_ref``, ``_ng_task_index``, ``_ng_rollout_index``.
Errors name the input file and line.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

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
    """Default agent for rows without ``agent_ref`` (``--agent``)."""
    limit: int | None = None
    """Read only the first N input lines (``--limit``; 0 or None means all)."""
    add_seed: bool = False
    """Put the rollout index as ``seed`` into ``metadata.extra_body`` (``--num-repeats-add-seed``)."""
    create_params_overrides: Mapping[str, Any] = field(default_factory=dict)
    """Merged into every row's ``responses_create_params`` (``--temperature``, ``--top-p``…)."""
    prompt_config: PromptConfig | None = None


def validate_repeats(spec: RepeatSpec) -> None:
    """Reject repeat counts below 1 (``--num-repeats 0``) and malformed mappings."""
    if isinstance(spec, bool) or not isinstance(spec, int | Mapping):
        raise UsageError(
            f"num_repeats must be an integer or a mapping of agent name to integer, got {spec!r}"
        )
    values = spec.items() if isinstance(spec, Mapping) else [("num_repeats", spec)]
    for name, value in values:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            where = "num_repeats" if name == "num_repeats" else f"num_repeats.{name}"
            raise UsageError(f"{where} must be an integer >= 1, got {value!r}")


def _repeats_for(spec: RepeatSpec, agent: str | None) -> int | None:
    if isinstance(spec, int):
        return spec
    if agent is not None and agent in spec:
        return spec[agent]
    return spec.get("_default")


def _render_prompt(row: dict[str, Any], prompt: PromptConfig, where: str) -> None:
    params = row.get(keys.RESPONSES_CREATE_PARAMS)
    if isinstance(params, dict) and "input" in params:
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
    params = dict(params) if isinstance(params, dict) else {}
    row[keys.RESPONSES_CREATE_PARAMS] = {"input": messages, **params}


def _add_seed(params: dict[str, Any], seed: int, where: str) -> None:
    metadata = params.get("metadata") or {}
    raw = metadata.get("extra_body") or "{}"
    try:
        extra = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise DataError(
            f"{where}: responses_create_params.metadata.extra_body is not a JSON string"
        ) from None
    extra["seed"] = seed
    params["metadata"] = {**metadata, "extra_body": orjson.dumps(extra).decode()}


def iter_materialized(path: str | os.PathLike[str], options: MaterializeOptions) -> Iterator[dict[str, Any]]:
    """Yield materialized rows in "aabbcc" order, streaming over the input file.

    The repeats of one input row share its nested values: treat the yielded rows as read-only.

    Rows without an agent, or whose agent has no repeat count, are collected and reported in one error
    after the whole file was read, so a user fixes every row at once.
    """
    validate_repeats(options.num_repeats)
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
                _render_prompt(row, options.prompt_config, where)
            params = row.get(keys.RESPONSES_CREATE_PARAMS)
            if not isinstance(params, dict):
                raise DataError(f"{where}: row has no 'responses_create_params' object")
            if options.agent_name is not None:
                row.setdefault(keys.AGENT_REF, {"name": options.agent_name})
            ref = row.get(keys.AGENT_REF)
            agent = ref.get("name") if isinstance(ref, dict) else None
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
