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

- **Unequal repeats** (tasks with different numbers of rollouts — an ``--adaptive`` run, a run with
  failed rollouts): averaging over the tasks with ≥ k rollouts, as above, silently drops the
  tasks a run stopped early (an adaptive run's pass@16 read 43.6 % against a true 75.4 %). There, every
  task counts at every k: a task whose values are all 0/1 contributes E[1 − (1 − p)^k] under its
  posterior given the pool's fitted prior (:mod:`rewardgym.stats.posterior`; the stopping rule does not
  change a posterior), ``pass@1[avg-of-k]`` is the mean of E[p] (what the first k rollouts of every task
  would have averaged); other tasks contribute ``max`` of their first min(n, k) values, and
  ``majority@k`` votes among the first min(n, k). So each pass@k is defined, grows with k, and states
  the tasks behind it: ``pass@{k}/<score>/tasks_with_k_rollouts`` counts the tasks that had k rollouts
  (the rest are modelled). Equal repeats keep the keys and numbers above (NeMo Gym 0.7.0's).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

ScoreFn = Callable[[Mapping[str, Any]], Mapping[str, float | int | bool]]

TASKS_SUFFIX = "/tasks_with_k_rollouts"
STAT_SUFFIXES = ("/std_dev_across_runs", "/std_err_across_runs", TASKS_SUFFIX)


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

    # Unequal repeats: tasks with different numbers of rollouts (a score that only some rollouts carry,
    # e.g. a judge's, is not that: NeMo Gym's rule applies to it as before).
    if len({len(rollouts) for rollouts in tasks if rollouts}) > 1:
        return _unequal_metrics(scored, answers, names, max_k, per_sample, answer_key is not None), per_sample
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


def _posterior_terms(values: list[list[float]]) -> tuple[Any, list[bool]] | None:
    """The posterior of every task whose values are all 0/1 (None when no task is), and which tasks are."""
    import numpy as np

    from rewardgym.stats.posterior import posterior  # numpy and scipy: only runs with unequal repeats pay
    from rewardgym.stats.prior import fit_pool_prior

    binary = [bool(v) and all(x in (0, 1) for x in v) for v in values]
    if not any(binary):
        return None
    n = np.array([len(v) for v, b in zip(values, binary, strict=True) if b], np.int64)
    s = np.array([int(sum(v)) for v, b in zip(values, binary, strict=True) if b], np.int64)
    return posterior(n, s, fit_pool_prior(n, s)), binary


def _unequal_metrics(
    scored: list[dict[str, list[float]]],
    answers: list[list[Any]],
    names: list[str],
    max_k: int,
    per_sample: dict[str, list[float]],
    with_majority: bool,
) -> dict[str, float]:
    """pass@k and friends when tasks have unequal repeats (see module doc)."""
    metrics: dict[str, float] = {}
    for name in names:
        present = [(i, s[name]) for i, s in enumerate(scored) if s.get(name)]
        values = [v for _, v in present]
        model = _posterior_terms(values)
        mean_p = None if model is None else model[0].mean().tolist()
        for k in range(1, max_k + 1):
            at_k = None if model is None else model[0].pass_at_k(k).tolist()
            pass_terms: list[float] = []
            avg_terms: list[float] = []
            position = 0
            for v in values:
                if model is not None and model[1][len(pass_terms)]:
                    assert at_k is not None and mean_p is not None
                    pass_terms.append(float(at_k[position]))
                    avg_terms.append(float(mean_p[position]))
                    position += 1
                else:
                    pass_terms.append(float(max(v[:k])))
                    avg_terms.append(statistics.fmean(v[:k]))
            metrics[f"pass@{k}/{name}"] = 100.0 * statistics.fmean(pass_terms)
            metrics[f"pass@{k}/{name}{TASKS_SUFFIX}"] = float(sum(1 for v in values if len(v) >= k))
            avg_key = f"pass@1[avg-of-{k}]/{name}"
            metrics[avg_key] = 100.0 * statistics.fmean(avg_terms)
            if with_majority:
                # a task with fewer than k rollouts (or scores) votes among those it has
                metrics[f"majority@{k}/{name}"] = 100.0 * statistics.fmean(
                    _majority_at_k(answers[i][: len(v)], v, min(k, len(v))) for i, v in present
                )
            if k >= 2:
                std = statistics.stdev(per_sample[name][:k])
                metrics[avg_key + STAT_SUFFIXES[0]] = std
                metrics[avg_key + STAT_SUFFIXES[1]] = std / math.sqrt(k)
    return metrics
