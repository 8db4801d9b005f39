"""pass@k and majority@k of verify responses, grouped by task (pure functions, no I/O).

Semantics follow the NeMo Gym contract (docs/reference/contract.md §4.6):

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
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

ScoreFn = Callable[[Mapping[str, Any]], Mapping[str, float | int | bool]]

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
