"""What NeMo Gym 0.7.0's agents add to the answers of ``/run`` and ``/aggregate_metrics`` (a private module:
the registry takes a module of this package whose name has no leading ``_`` for an agent implementation).

Contract:

* :func:`with_run_outcome`: a ``/run`` answer (the verify reply's bytes, a JSON object) gets
  :data:`RUN_OUTCOME` — ``mask_sample: false``, ``failure_kind: null``, ``failure_reason: null``, in that
  order — for each of the three keys the reply does not already have (an environment that masks a sample or
  names a failure keeps its own). The keys are appended to the bytes (the reply is not serialised again), so
  the environment's own bytes are unchanged.
* :func:`with_run_metrics`: an ``/aggregate_metrics`` answer's ``agent_metrics`` gain
  ``per_sample_aggregate`` — ``{"accuracy": [100 × the mean reward of the i-th rollout (by rollout index)
  of the tasks that have one, for each i]}``, the per-run means of
  :func:`~rewardgym.metrics.pass_at_k.pass_majority_metrics` without its pass@k work — and, last,
  ``num_repeats`` (the most rollouts any task has, as NeMo Gym's agent reports), from the request's
  ``verify_responses``; keys the environment set are kept. An answer or request that is not the expected
  JSON is returned unchanged (the caller reports the error it meets). This lives here, not in
  :mod:`rewardgym.metrics`, because it is the agent's addition to its environment's answer.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any, Final

import orjson

from rewardgym.protocol import keys

RUN_OUTCOME: Final[Mapping[str, Any]] = {"mask_sample": False, "failure_kind": None, "failure_reason": None}


def with_run_outcome(body: bytes, parsed: Mapping[str, Any]) -> bytes:
    """``body`` (whose parse is ``parsed``) with the :data:`RUN_OUTCOME` keys it lacks appended."""
    missing = {k: v for k, v in RUN_OUTCOME.items() if k not in parsed}
    stripped = body.rstrip()
    if not missing or not stripped.endswith(b"}"):
        return body
    extra = orjson.dumps(missing)[1:]  # '"mask_sample":false,…}'
    return stripped[:-1] + (b"," if parsed else b"") + extra


def with_run_metrics(answer: bytes, request: bytes) -> bytes:
    """``answer`` with ``per_sample_aggregate`` and ``num_repeats`` in its ``agent_metrics`` (module doc)."""
    try:
        metrics = orjson.loads(answer)
        rows = orjson.loads(request).get("verify_responses")
    except (orjson.JSONDecodeError, AttributeError):
        return answer
    agent = metrics.get("agent_metrics") if isinstance(metrics, dict) else None
    if not isinstance(agent, dict) or not isinstance(rows, list):
        return answer
    runs, most = _runs(rows)
    if "per_sample_aggregate" not in agent:
        agent["per_sample_aggregate"] = {"accuracy": [100.0 * statistics.fmean(run) for run in runs]}
    if "num_repeats" not in agent:
        agent["num_repeats"] = most
    return orjson.dumps(metrics)


def _score(row: Mapping[str, Any]) -> float | None:
    reward = row.get(keys.REWARD)
    return float(reward) if isinstance(reward, int | float) else None


def _runs(rows: list[Any]) -> tuple[list[list[float]], int]:
    """(runs[i]: the i-th scored rollout of every task that has one, the most rollouts of a task). One pass
    when the rows come sorted by (task, rollout), as the collectors send them; else grouped and sorted."""
    runs: list[list[float]] = []
    most = position = count = 0
    previous: tuple[Any, Any] | None = None
    try:
        for row in rows:
            key = (row[keys.TASK_INDEX], row.get(keys.ROLLOUT_INDEX) or 0)
            if previous is None or key[0] != previous[0]:
                position = count = 0
            elif not key > previous:
                raise ValueError("unsorted")
            previous = key
            count += 1
            most = max(most, count)
            score = _score(row)
            if score is not None:
                if position == len(runs):
                    runs.append([])
                runs[position].append(score)
                position += 1
        return runs, most
    except (KeyError, TypeError, ValueError):  # not sorted (or keys of mixed types): group them first
        pass
    tasks: dict[Any, list[tuple[Any, float | None]]] = {}
    for row in rows:
        if isinstance(row, dict):
            tasks.setdefault(row.get(keys.TASK_INDEX), []).append(
                (row.get(keys.ROLLOUT_INDEX) or 0, _score(row))
            )
    runs = []
    for group in tasks.values():
        group.sort(key=lambda pair: pair[0])
        for i, score in enumerate(s for _, s in group if s is not None):
            if i == len(runs):
                runs.append([])
            runs[i].append(score)
    return runs, max((len(group) for group in tasks.values()), default=0)
