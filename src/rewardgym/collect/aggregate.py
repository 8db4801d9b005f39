"""Aggregate metrics over *persisted* rollouts, computed by each agent's ``/aggregate_metrics``.

Each rollout is sent stripped of its bulky parts (``response`` except ``response.usage``,
``responses_create_params``, trajectories), grouped by ``agent_ref.name``. The answers are written to
``<stem>_aggregate_metrics.json`` as a list of ``{agent_ref, agent_metrics, key_metrics,
group_level_metrics}`` (NeMo Gym's shape, indented), followed by ``repeat_level_metrics`` and
``perf_summary`` when the agent's answer has them (a NeMo Gym 0.7.0 agent's). A stored ``reward`` that is
not a number is a :class:`~rewardgym.errors.DataError` naming ``file:line`` (the agents would refuse the
whole request).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from rewardgym.config.secrets import mask_known_secrets
from rewardgym.errors import DataError, ServerError
from rewardgym.io.jsonl import read_jsonl_tolerant
from rewardgym.io.outputs import atomic_write_bytes
from rewardgym.protocol import keys

_DROPPED = frozenset(
    {
        keys.RESPONSE,
        keys.RESPONSES_CREATE_PARAMS,
        "ng_agent_observations",
        "ng_model_call_capture",
        "ng_trajectory",
    }
)


_KEPT = ("repeat_level_metrics", "perf_summary")
"""Keys of an ``/aggregate_metrics`` answer written to the entry when the agent gives them."""


def strip_for_metrics(result: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a rollout that aggregate metrics read (NeMo Gym keeps only ``response.usage``)."""
    slim = {k: v for k, v in result.items() if k not in _DROPPED}
    response = result.get(keys.RESPONSE)
    if isinstance(response, Mapping) and response.get("usage") is not None:
        slim[keys.RESPONSE] = {"usage": response["usage"]}
    return slim


def _check_reward(row: Mapping[str, Any], where: str) -> None:
    """A stored reward must be a number: ``/aggregate_metrics`` (ours and NeMo Gym's) refuses anything
    else with HTTP 422 and the request's index, so the file and line are named here instead."""
    if keys.REWARD not in row:
        return
    reward = row[keys.REWARD]
    if type(reward) in (int, float, bool):
        return
    shown = "null" if reward is None else f"{type(reward).__name__} {orjson.dumps(reward).decode()[:40]}"
    raise DataError(f"{where}: 'reward' must be a number, got {shown}")


def group_by_agent(paths: Iterable[Path]) -> dict[str, list[dict[str, Any]]]:
    """Persisted rollouts of all ``paths``, stripped and sorted by key, grouped per agent name."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        rows, _ = read_jsonl_tolerant(path, what="Rollouts file")
        for number, row in enumerate(rows, start=1):  # every line is a row (a bad line is an error)
            _check_reward(row, f"{path}:{number}")
            ref = row.get(keys.AGENT_REF)
            name = ref.get("name") if isinstance(ref, Mapping) else None
            if isinstance(name, str):
                groups.setdefault(name, []).append(strip_for_metrics(row))
    return _sorted_groups(groups)


def _sorted_groups(groups: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    for rows in groups.values():
        rows.sort(key=lambda r: (r.get(keys.TASK_INDEX, 0), r.get(keys.ROLLOUT_INDEX, 0)))
    return dict(sorted(groups.items()))


class StreamedGroups:
    """:func:`group_by_agent` of a rollouts file computed from the rows as they are written (no read back).

    :meth:`add` takes each stored row in memory; the row's stripped part is kept as the file would give it
    back (the stored line masks known secrets: a slim row holding one is masked the same way)."""

    def __init__(self) -> None:
        self._groups: dict[str, list[dict[str, Any]]] = {}

    def add(self, row: Mapping[str, Any]) -> None:
        ref = row.get(keys.AGENT_REF)
        name = ref.get("name") if isinstance(ref, Mapping) else None
        if not isinstance(name, str):
            return
        slim = strip_for_metrics(row)
        data = orjson.dumps(slim)
        masked = mask_known_secrets(data)
        self._groups.setdefault(name, []).append(slim if masked is data else orjson.loads(masked))

    def groups(self) -> dict[str, list[dict[str, Any]]]:
        """The rows added, stripped, sorted by key, grouped per agent name (as :func:`group_by_agent`)."""
        return _sorted_groups(self._groups)


async def compute_aggregate_metrics(
    groups: Mapping[str, list[dict[str, Any]]],
    agent_urls: Mapping[str, str],
    *,
    timeout_s: float = 600.0,
    headers: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Ask each agent for its metrics; an unreachable or failing agent is a clear :class:`ServerError`.

    ``headers`` go with every request (e.g. the shared auth token)."""
    entries: list[dict[str, Any]] = []
    import aiohttp  # on use: a run with aggregation off never loads it

    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(timeout=timeout, cookie_jar=aiohttp.DummyCookieJar()) as session:
        for agent, rows in groups.items():
            url = agent_urls.get(agent)
            if url is None:
                raise ServerError(f"cannot compute aggregate metrics: no running agent named {agent!r}")
            body = orjson.dumps({"verify_responses": rows})
            # An agent with replicas: the first that accepts a connection answers (one may have died).
            candidates = list(getattr(agent_urls, "replicas", {}).get(agent) or [url])
            for number, base in enumerate(candidates, start=1):
                try:
                    async with session.post(
                        base.rstrip("/") + "/aggregate_metrics",
                        data=body,
                        headers={"Content-Type": "application/json", **(headers or {})},
                    ) as response:
                        payload = await response.read()
                        if response.status >= 300:
                            text = payload.decode("utf-8", errors="replace")[:300]
                            raise ServerError(
                                f"agent {agent!r} /aggregate_metrics answered HTTP {response.status}: {text}"
                            )
                    break
                except aiohttp.ClientConnectorError as exc:
                    if number < len(candidates):
                        continue
                    raise ServerError(
                        f"agent {agent!r} /aggregate_metrics failed: {type(exc).__name__}: {exc}"
                    ) from None
                except (aiohttp.ClientError, TimeoutError) as exc:
                    raise ServerError(
                        f"agent {agent!r} /aggregate_metrics failed: {type(exc).__name__}: {exc}"
                    ) from None
            metrics = orjson.loads(payload)
            entry = {
                "agent_ref": {"name": agent},
                "agent_metrics": metrics.get("agent_metrics", {}),
                "key_metrics": metrics.get("key_metrics", {}),
                "group_level_metrics": metrics.get("group_level_metrics", []),
            }
            # What a NeMo Gym 0.7.0 agent adds to its answer is kept, as its collector keeps it.
            entry.update({key: metrics[key] for key in _KEPT if key in metrics})
            entries.append(entry)
    return entries


def write_aggregate_metrics(path: Path, entries: list[dict[str, Any]]) -> None:
    atomic_write_bytes(path, orjson.dumps(entries, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))


def format_key_metrics(entries: list[dict[str, Any]]) -> str:
    blocks = []
    for entry in entries:
        pretty = orjson.dumps(entry["key_metrics"], option=orjson.OPT_INDENT_2).decode()
        blocks.append(f"\nKey metrics for {entry['agent_ref']['name']}:\n{pretty}")
    return "\n".join(blocks)
