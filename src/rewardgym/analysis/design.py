"""How a run chose its repeats, and the per-task pass-rate estimate that is unbiased under that design.

Contract:

- :func:`adaptive_policy(run_file)`: the :class:`~rewardgym.stats.adaptive.AdaptivePolicy` recorded in a
  run's ``<stem>_run.json`` (``settings.adaptive``), or None for a fixed design (no file, no record).
  Runs recorded before the regret rule are replayed with the rule they used.
- :func:`design_estimates`: per task, s / n for a fixed design; for an adaptive run the Rao–Blackwell
  estimate (:mod:`rewardgym.stats.sequential`), replaying the run's rule from its own rollouts. When the
  analysis' pass threshold differs from the one the rule counted passes with, the rule's sufficient
  statistic does not hold the analysis' passes: the estimate is then the mean of the task's first round,
  which is unbiased too (and noisier).
- :func:`adaptive_task_rates`: the same estimates read from a run's rollouts file (``gym eval profile``'s
  summary of an adaptive run).
- :data:`FIXED_LABEL` / :data:`ADAPTIVE_LABEL` name the estimate wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from rewardgym.analysis.columns import task_positions, task_segments
from rewardgym.analysis.scan import scan_rollouts
from rewardgym.analysis.sidecars import output_paths, read_run
from rewardgym.stats.adaptive import AdaptivePolicy
from rewardgym.stats.arrays import BoolArray, FloatArray, IntArray
from rewardgym.stats.sequential import blocks_from_rollouts, rao_blackwell

FIXED_LABEL = "s / n (fixed repeats)"
ADAPTIVE_LABEL = (
    "unbiased under the adaptive stopping rule (Rao-Blackwell, first rollout given the run's counts)"
)


def adaptive_policy(run_file: Mapping[str, Any] | None) -> AdaptivePolicy | None:
    """The adaptive policy a run recorded, or None (see module doc)."""
    if not isinstance(run_file, Mapping):
        return None
    settings = run_file.get("settings")
    recorded = settings.get("adaptive") if isinstance(settings, Mapping) else None
    if not isinstance(recorded, Mapping):
        return None
    try:
        return AdaptivePolicy.from_dict(dict(recorded))
    except (TypeError, ValueError):
        return None


def design_estimates(
    policy: AdaptivePolicy | None,
    task_pos: IntArray,
    tasks: int,
    rollout: IntArray,
    counted: BoolArray,
    passed: BoolArray,
    pass_threshold: float,
) -> FloatArray | None:
    """Per-task estimates for an adaptive run (None for a fixed design: s / n is the estimate)."""
    if policy is None:
        return None
    blocks = blocks_from_rollouts(task_pos, tasks, rollout, counted, passed, policy)
    if pass_threshold == policy.pass_threshold:
        return rao_blackwell(blocks, policy)
    first = np.argmax(blocks.m > 0, axis=1)
    rows = np.arange(tasks)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = blocks.x[rows, first] / blocks.m[rows, first]
    return np.asarray(np.where(blocks.m[rows, first] > 0, mean, np.nan), dtype=np.float64)


def adaptive_task_rates(
    rollouts: Path, pass_threshold: float | None = None
) -> tuple[FloatArray, AdaptivePolicy] | None:
    """For an adaptive run (its ``<stem>_run.json`` beside ``rollouts`` says so): each task's estimate,
    unbiased under the stopping rule, read from the rollouts file; None for a fixed design. The pass
    threshold is the rule's own unless given."""
    policy = adaptive_policy(read_run(output_paths(rollouts).run_file))
    if policy is None:
        return None
    columns = scan_rollouts(rollouts).columns
    threshold = policy.pass_threshold if pass_threshold is None else pass_threshold
    counted = ~columns.masked & np.isfinite(columns.reward)
    with np.errstate(invalid="ignore"):
        passed = counted & (columns.reward >= threshold)
    task, _ = task_segments(columns.task)
    task_pos = task_positions(columns.task)
    rates = design_estimates(policy, task_pos, int(task.shape[0]), columns.rollout, counted,
                             passed, threshold)  # fmt: skip
    assert rates is not None
    return np.asarray(rates[~np.isnan(rates)], dtype=np.float64), policy
