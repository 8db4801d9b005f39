"""Aggregate metrics of verify responses: pass@k, majority@k, and the per-task/agent statistics baseline.

Pure functions (no I/O), used by ``POST /aggregate_metrics`` of resources servers and reusable by the
collector and the profiler. Semantics follow the NeMo Gym contract (docs/reference/contract.md §4.6):

- :func:`pass_majority_metrics` ``(tasks, score_fn, answer_key)``: ``tasks`` is a list of tasks, each the list
  of its rollouts (dicts) in rollout order. Scores (booleans become 0/1) are averaged over tasks and reported
  as **percentages**:

  * ``pass@k/<score>``: over tasks with ≥ k rollouts; a task whose values are all 0/1 contributes the unbiased
    estimator ``1 − C(n−c, k) / C(n, k)`` (n rollouts, c correct), otherwise ``max(values[:k])``;
  * ``pass@1[avg-of-k]/<score>``: the mean of the first k values of each task with ≥ k rollouts; for k ≥ 2
    also ``…/std_dev_across_runs`` (sample std of the first k per-run aggregates) and
    ``…/std_err_across_runs`` (that std / √k);
  * ``majority@k/<score>`` (only when ``answer_key`` names the answer field): among the first k rollouts, the
    score of the most frequent ``(answer, score)`` pair (``None`` answers ignored; ties averaged; a task with
    no answer scores 0); with ``answer_key`` the binary score ``no_answer`` is added.

  It also returns ``per_sample_aggregate[score]``: for each run index i, 100 × the mean score of rollout i.
- :func:`highest_k_metrics` picks the entries of one metric family at the largest k.
- :func:`compute_aggregate_metrics` groups verify responses by ``_ng_task_index`` (sorted; rollouts by
  ``_ng_rollout_index``), runs a *profile function* for the statistics baseline, merges an environment's
  ``compute_metrics(tasks)`` (its optional ``per_task_metrics`` list goes into the group rows) and selects
  ``key_metrics`` (default: every ``mean/*`` entry).

Profiler hook: :data:`ProfileFn` is the signature of the baseline statistics. The default of resources
servers, :func:`profiler_profile`, is the profiler's own statistics (``rewardgym.profile``, a pure library
over the protocol and I/O layers, imported lazily); :func:`basic_profile` computes ``mean/max/min/median/std``
without it.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import orjson

from rewardgym.protocol import AggregateMetrics, keys

ScoreFn = Callable[[Mapping[str, Any]], Mapping[str, float | int | bool]]
Task = tuple[int, list[dict[str, Any]]]
ProfileFn = Callable[[Sequence[Task]], tuple[dict[str, Any], list[dict[str, Any]]]]
"""(tasks as (task_index, rollouts)) → (agent-level statistics, one statistics row per task)."""

STAT_SUFFIXES = ("/std_dev_across_runs", "/std_err_across_runs")


def reward_score(row: Mapping[str, Any]) -> dict[str, float]:
    return {"accuracy": float(row["reward"])}


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return value


def _pass_at_k(values: Sequence[float], k: int) -> float:
    if all(v in (0, 1) for v in values):
        n = len(values)
        incorrect = n - int(sum(values))
        if incorrect < k:
            return 1.0
        return 1.0 - math.comb(incorrect, k) / math.comb(n, k)
    return float(max(values[:k]))


def _majority_at_k(answers: Sequence[Any], values: Sequence[float], k: int) -> float:
    pairs = Counter((_hashable(a), v) for a, v in zip(answers[:k], values[:k], strict=True) if a is not None)
    if not pairs:
        return 0.0
    top = max(pairs.values())
    winners = [score for (_, score), count in pairs.items() if count == top]
    return float(sum(winners) / len(winners))


def pass_majority_metrics(
    tasks: Sequence[Sequence[Mapping[str, Any]]],
    score_fn: ScoreFn = reward_score,
    answer_key: str | None = None,
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """pass@k / pass@1[avg-of-k] / majority@k percentages and per-run aggregates (module docstring)."""
    names: list[str] = []
    scored: list[dict[str, list[float]]] = []
    answers: list[list[Any]] = []
    for rollouts in tasks:
        per_name: dict[str, list[float]] = {}
        for row in rollouts:
            scores = {name: float(value) for name, value in score_fn(row).items()}
            if answer_key is not None:
                scores["no_answer"] = float(row.get(answer_key) is None)
            for name, value in scores.items():
                if name not in names:
                    names.append(name)
                per_name.setdefault(name, []).append(value)
        scored.append(per_name)
        answers.append([row.get(answer_key) for row in rollouts] if answer_key else [])
    max_k = max((len(t) for t in tasks), default=0)

    per_sample: dict[str, list[float]] = {}
    for name in names:
        runs = []
        for i in range(max_k):
            column = [s[name][i] for s in scored if len(s.get(name, ())) > i]
            runs.append(100.0 * statistics.fmean(column) if column else 0.0)
        per_sample[name] = runs

    metrics: dict[str, float] = {}
    for k in range(1, max_k + 1):
        for name in names:
            eligible = [(i, s[name]) for i, s in enumerate(scored) if len(s.get(name, ())) >= k]
            if not eligible:
                continue
            metrics[f"pass@{k}/{name}"] = 100.0 * statistics.fmean(_pass_at_k(v, k) for _, v in eligible)
            avg_key = f"pass@1[avg-of-{k}]/{name}"
            metrics[avg_key] = 100.0 * statistics.fmean(statistics.fmean(v[:k]) for _, v in eligible)
            if answer_key is not None:
                metrics[f"majority@{k}/{name}"] = 100.0 * statistics.fmean(
                    _majority_at_k(answers[i], v, k) for i, v in eligible
                )
            if k >= 2:
                std = statistics.stdev(per_sample[name][:k])
                metrics[avg_key + STAT_SUFFIXES[0]] = std
                metrics[avg_key + STAT_SUFFIXES[1]] = std / math.sqrt(k)
    return metrics, per_sample


def highest_k_metrics(
    metrics: Mapping[str, Any],
    family: str,
    *,
    score_names: Iterable[str] | None = None,
    exclude_names: Iterable[str] = (),
) -> dict[str, Any]:
    """Entries of ``family`` (``"pass@{k}"``, ``"pass@1[avg-of-{k}]"``, ``"majority@{k}"``) at the largest k.

    The ``…/std_dev_across_runs`` / ``…/std_err_across_runs`` entries are skipped; ``score_names`` keeps only
    those scores, ``exclude_names`` drops some.
    """
    head, _, tail = family.partition("{k}")
    pattern = re.compile(re.escape(head) + r"(\d+)" + re.escape(tail) + r"/(.+)")
    wanted = set(score_names) if score_names is not None else None
    excluded = set(exclude_names)
    by_k: dict[int, dict[str, Any]] = {}
    for key, value in metrics.items():
        match = pattern.fullmatch(key)
        if match is None or key.endswith(STAT_SUFFIXES):
            continue
        name = match.group(2)
        if (wanted is None or name in wanted) and name not in excluded:
            by_k.setdefault(int(match.group(1)), {})[key] = value
    return by_k[max(by_k)] if by_k else {}


def _numeric_fields(row: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in row.items():
        if key.startswith("_ng_") or key == keys.AGENT_REF:
            continue
        if isinstance(value, bool | int | float) and not (isinstance(value, float) and math.isnan(value)):
            out[key] = float(value)
    response = row.get(keys.RESPONSE)
    usage = response.get("usage") if isinstance(response, Mapping) else None
    if isinstance(usage, Mapping):
        for key, value in usage.items():
            if isinstance(value, bool | int | float):
                out[key] = float(value)
    return out


def describe(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``mean/max/min/median/std`` (stat-major keys) of the numeric fields of ``rows``."""
    columns: dict[str, list[float]] = {}
    for row in rows:
        for key, value in _numeric_fields(row).items():
            columns.setdefault(key, []).append(value)
    stats: dict[str, float] = {}
    for stat in ("mean", "max", "min", "median", "std"):
        for key, values in columns.items():
            if stat == "mean":
                stats[f"mean/{key}"] = statistics.fmean(values)
            elif stat == "max":
                stats[f"max/{key}"] = max(values)
            elif stat == "min":
                stats[f"min/{key}"] = min(values)
            elif stat == "median":
                stats[f"median/{key}"] = float(statistics.median(values))
            else:
                stats[f"std/{key}"] = statistics.stdev(values) if len(values) > 1 else 0.0
    return stats


def basic_profile(tasks: Sequence[Task]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The default :data:`ProfileFn`: statistics over all rollouts, and per task."""
    all_rows = [row for _, rollouts in tasks for row in rollouts]
    groups = [
        {keys.TASK_INDEX: index, "num_rollouts": len(rollouts), **describe(rollouts)}
        for index, rollouts in tasks
    ]
    return describe(all_rows), groups


HighestK = tuple[str, tuple[str, ...] | None, tuple[str, ...]]
"""A key-metric family: (``"pass@{k}"``-style pattern, score names or None for all, names to exclude)."""


def select_key_metrics(
    agent_metrics: Mapping[str, Any],
    first: Sequence[str],
    highest_k: Sequence[HighestK],
    last: Sequence[str] = (),
) -> dict[str, Any]:
    """Headline metrics: the ``first`` keys, each family at its highest k, then the ``last`` keys."""
    picked = {key: agent_metrics[key] for key in first if key in agent_metrics}
    for family, names, excluded in highest_k:
        picked.update(highest_k_metrics(agent_metrics, family, score_names=names, exclude_names=excluded))
    picked.update({key: agent_metrics[key] for key in last if key in agent_metrics})
    return picked


def profiler_profile(tasks: Sequence[Task]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The :data:`ProfileFn` of NeMo Gym's aggregate metrics: ``gym eval profile``'s own statistics.

    The rollouts are profiled as one agent (NeMo Gym's synthetic ``{"name": "agent"}`` rows): the
    agent-level entry (with the across-repeat aggregates) becomes ``agent_metrics`` and the per-task
    profile rows become ``group_level_metrics``. The profiler only depends on the protocol and I/O layers,
    so it is imported here lazily (numpy) rather than duplicated.
    """
    import warnings

    from rewardgym.profile import profile_results

    results = [
        {keys.TASK_INDEX: index, keys.ROLLOUT_INDEX: position, **row}
        for index, rollouts in tasks
        for position, row in enumerate(rollouts)
    ]
    with warnings.catch_warnings():  # "sem is 0" notes are for the profile CLI, not a server log
        warnings.simplefilter("ignore", UserWarning)
        profiled = profile_results(results)
    agent = dict(profiled.agent_metrics[0]) if profiled.agent_metrics else {}
    agent.pop(keys.AGENT_REF, None)
    return agent, [dict(row) for row in profiled.task_rows]


def group_by_task(verify_responses: Sequence[Mapping[str, Any]]) -> list[Task]:
    """Rollouts grouped by ``_ng_task_index`` (position when absent), sorted, rollouts in rollout order."""
    grouped: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    for position, row in enumerate(verify_responses):
        task = row.get(keys.TASK_INDEX, position)
        rollout = row.get(keys.ROLLOUT_INDEX, position)
        grouped.setdefault(int(task), []).append((int(rollout), dict(row)))
    return [
        (task, [row for _, row in sorted(rows, key=lambda p: p[0])]) for task, rows in sorted(grouped.items())
    ]


def default_key_metrics(agent_metrics: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in agent_metrics.items() if key.startswith("mean/")}


def compute_aggregate_metrics(
    verify_responses: Sequence[Mapping[str, Any]],
    *,
    compute_metrics: Callable[[list[list[dict[str, Any]]]], Mapping[str, Any]] | None = None,
    key_metrics: Callable[[Mapping[str, Any]], Mapping[str, Any]] = default_key_metrics,
    profile: ProfileFn = basic_profile,
) -> AggregateMetrics:
    """Agent metrics, per-task rows and key metrics of a list of verify responses (module docstring)."""
    tasks = group_by_task(verify_responses)
    agent_metrics, group_rows = profile(tasks)
    agent_metrics = {k: v for k, v in agent_metrics.items() if not k.startswith("histogram")}
    agent_metrics.pop(keys.AGENT_REF, None)
    if compute_metrics is not None:
        extra = dict(compute_metrics([rollouts for _, rollouts in tasks]))
        per_task = extra.pop("per_task_metrics", None)
        agent_metrics.update(extra)
        if isinstance(per_task, list):
            for row, task_metrics in zip(group_rows, per_task, strict=False):
                if isinstance(task_metrics, Mapping):
                    row.update(task_metrics)
    return AggregateMetrics(
        group_level_metrics=group_rows,
        agent_metrics=agent_metrics,
        key_metrics=dict(key_metrics(agent_metrics)),
    )
