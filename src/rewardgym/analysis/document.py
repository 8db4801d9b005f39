"""The whole analysis as one JSON-ready document (pure; no I/O): sections 1–4 from the columns.

Contract of :func:`analyze_columns`: given sorted :class:`RolloutColumns` and :class:`Settings`, returns
an :class:`Analysis` — the document written as ``<stem>_analysis.json`` (``docs/analysis.md`` lists every
field) plus the intermediate arrays the report and health files reuse. Counted rollouts: not masked, with
a numeric reward.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rewardgym.analysis.columns import RolloutColumns, task_positions, task_segments
from rewardgym.analysis.design import ADAPTIVE_LABEL, FIXED_LABEL, adaptive_policy, design_estimates
from rewardgym.analysis.grpo import (
    DEFAULT_GROUP_SIZES,
    DEFAULT_TARGET,
    Forecast,
    binary_tasks,
    value_frequencies,
)
from rewardgym.analysis.health import health_checks
from rewardgym.analysis.health_types import Health
from rewardgym.analysis.length import length_analysis, task_tokens_per_solve
from rewardgym.analysis.trajectory_evidence import TrajectoryEvidence
from rewardgym.analysis.uncertainty import (
    CONFIDENCE,
    DEFAULT_EPSILON,
    TaskPasses,
    band_table,
    pass_counts,
    repeats_to_settle,
    task_passes,
)
from rewardgym.profile import BAND_LABELS

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Settings:
    """What the user can choose."""

    pass_threshold: float = 1.0
    confidence: float = CONFIDENCE
    settle_epsilon: float = DEFAULT_EPSILON
    group_sizes: tuple[int, ...] = DEFAULT_GROUP_SIZES
    default_group: int = 8
    target_share: float = DEFAULT_TARGET
    reward_range: tuple[float, float] | None = None
    """None: the range the run's environments declared (``<stem>_run.json``), else [0, 1]."""
    ignored_checks: tuple[str, ...] = ()
    """Health checks that do not run (``--ignore-checks``), sorted ids."""


DEFAULT_REWARD_RANGE = (0.0, 1.0)


@dataclass(frozen=True)
class RunFacts:
    """What the caller read beside the rollouts (all optional)."""

    rollouts_path: str = ""
    inputs_path: str | None = None
    materialized: int | None = None
    failure_classes: dict[str, int] = field(default_factory=dict)
    failure_tasks: np.ndarray | None = None
    unreadable: int = 0
    wall_time_s: float | None = None
    run_file: dict[str, Any] | None = None
    uncollected_tasks: np.ndarray | None = None
    """Tasks of the materialized inputs with neither a rollout nor a failure record (None: not known)."""
    trajectory: TrajectoryEvidence | None = None
    """The trajectory checks of the lines with ``ng_trajectory`` (None: no line has one)."""


@dataclass(frozen=True)
class Analysis:
    document: dict[str, Any]
    passes: TaskPasses
    health: Health
    forecast: Forecast
    task_pos: np.ndarray
    passed: np.ndarray
    counted: np.ndarray
    mean_tokens: np.ndarray
    tokens_per_solve: np.ndarray
    p_all_equal: np.ndarray
    repeats_to_settle: np.ndarray | None = None
    """Per task (in ``passes`` order), how many more repeats would settle it
    (:func:`rewardgym.analysis.uncertainty.repeats_to_settle`; 0 when settled) — ``inf`` when not even
    1,024 more would, NaN without counted rollouts. ``document["uncertainty"]["repeats_to_settle"]`` is
    their sum over the unsettled tasks within reach; the report's task browser shows the per-task column,
    the bands section and ``gym eval analyze`` the overall number."""


def _share(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _grpo(forecast: Forecast, passes: TaskPasses, settings: Settings) -> dict[str, Any]:
    settled_extreme = passes.settled & ((passes.band == 0) | (passes.band == 6))
    observed_extreme = (passes.band == 0) | (passes.band == 6)
    filters = {"all": None, "drop_settled_0_100": ~settled_extreme, "drop_observed_0_100": ~observed_extreme}
    groups = []
    share_range = forecast.share_range(settings.default_group)
    for size in settings.group_sizes:
        row: dict[str, Any] = {"group_size": size}
        for name, keep in filters.items():
            row[name] = _share(forecast.informative_share(size, keep))
        groups.append(row)
    return {
        "method": "binary tasks: E[p^G + (1-p)^G] under each task's posterior given the pool's fitted "
                  "prior (weights on p = 0, a grid in between and p = 1, maximum marginal likelihood); "
                  "others: plug-in sum_v f_v^G",
        "prior": forecast.prior.as_dict(),
        "binary_tasks": int(np.count_nonzero(forecast.binary & (passes.n > 0))),
        "plugin_tasks": int(np.count_nonzero(~forecast.binary & (passes.n > 0))),
        "default_group_size": settings.default_group,
        "informative_share_default": _share(forecast.informative_share(settings.default_group)),
        "informative_share_default_range": None if share_range is None else [_share(v) for v in share_range],
        "tasks_kept": {
            name: int(np.count_nonzero((passes.n > 0) if keep is None else keep & (passes.n > 0)))
            for name, keep in filters.items()
        },
        "groups": groups,
        "target_share": settings.target_share,
        "smallest_group_size": {name: forecast.smallest_group(settings.target_share, keep)
                                for name, keep in filters.items()},
    }  # fmt: skip


def _overall(passes: TaskPasses, passed: np.ndarray, counted: np.ndarray, *, adaptive: bool) -> float | None:
    """The run's pass rate: pooled over rollouts for a fixed design (each task weighs its repeats); for an
    adaptive run the mean of the tasks' unbiased estimates (pooling would weigh tasks by how long the
    rule kept them, and their s / n is biased)."""
    if not counted.any():
        return None
    if not adaptive:
        return float(passed.sum() / counted.sum())
    rates = passes.rate[~np.isnan(passes.rate)]
    return float(rates.mean()) if rates.shape[0] else None


def analyze_columns(columns: RolloutColumns, settings: Settings, facts: RunFacts | None = None) -> Analysis:
    """Sections 1–4 (see module doc)."""
    facts = facts or RunFacts()
    reward_range = settings.reward_range or DEFAULT_REWARD_RANGE
    task_ids, starts = task_segments(columns.task)
    task_pos = task_positions(columns.task)
    counted = ~columns.masked & np.isfinite(columns.reward)
    with np.errstate(invalid="ignore"):
        passed = counted & (columns.reward >= settings.pass_threshold)
    binary = binary_tasks(starts, counted, columns.reward)
    owner, freq = value_frequencies(task_pos, counted, columns.reward)
    policy = adaptive_policy(facts.run_file)
    estimate = design_estimates(policy, task_pos, len(task_ids), columns.rollout, counted, passed,
                                settings.pass_threshold)  # fmt: skip
    forecast = Forecast(*pass_counts(starts, counted, passed), binary, owner, freq)
    passes = task_passes(task_ids, starts, counted, passed, epsilon=settings.settle_epsilon,
                         confidence=settings.confidence, estimate=estimate,
                         prior=forecast.prior)  # fmt: skip
    cut = columns.cut_off
    length = length_analysis(task_pos, counted, columns.reward, passed, columns.output_tokens, cut)
    mean_tokens, per_solve = task_tokens_per_solve(
        task_pos, len(task_ids), counted, passed, columns.output_tokens
    )
    health = health_checks(
        columns, task_ids, starts, passes.passes, reward_range=reward_range,
        failure_classes=facts.failure_classes, failure_tasks=facts.failure_tasks,
        materialized=facts.materialized, unreadable=facts.unreadable,
        uncollected_tasks=facts.uncollected_tasks, ignored=settings.ignored_checks,
        trajectory=facts.trajectory,
    )  # fmt: skip
    p_equal = forecast.all_equal(settings.default_group)
    bands = band_table(passes)
    continuous = int(np.count_nonzero(counted & (columns.reward != 0) & (columns.reward != 1)))
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "settings": {
            "pass_threshold": settings.pass_threshold,
            "confidence": settings.confidence,
            "settle_epsilon": settings.settle_epsilon,
            "group_sizes": list(settings.group_sizes),
            "default_group_size": settings.default_group,
            "target_share": settings.target_share,
            "reward_range": list(reward_range),
        },
        "run": {
            "rollouts_file": facts.rollouts_path,
            "inputs_file": facts.inputs_path,
            "rollout_lines": len(columns) + facts.unreadable,
            "unreadable_lines": facts.unreadable,
            "counted_rollouts": int(np.count_nonzero(counted)),
            "masked_rollouts": int(np.count_nonzero(columns.masked)),
            "rollouts_without_reward": int(np.count_nonzero(~columns.masked & ~np.isfinite(columns.reward))),
            "continuous_rewards": continuous,
            "tasks": len(task_ids),
            "materialized_rollouts": facts.materialized,
            "failures": {
                "total": sum(facts.failure_classes.values()),
                "by_class": dict(sorted(facts.failure_classes.items())),
            },
            "wall_time_s": facts.wall_time_s,
            "agents": list(columns.agents),
            "run_file": facts.run_file,
        },
        "uncertainty": {
            "design": "fixed" if policy is None else "adaptive",
            "estimate": FIXED_LABEL if policy is None else ADAPTIVE_LABEL,
            "interval": "Jeffreys, Beta(s+1/2, n-s+1/2); lower 0 when s=0, upper 1 when s=n",
            "settled_rule": "P(p in the task's band | its rollouts, the pool's fitted prior) >= "
            f"{settings.confidence}",
            "prior": passes.prior.as_dict(),
            "tasks": int(np.count_nonzero(passes.n > 0)),
            "settled": int(np.count_nonzero(passes.settled)),
            "pass_rate_overall": _overall(passes, passed, counted, adaptive=policy is not None),
            "bands": [
                {"band": label, "tasks": t, "settled": s}
                for label, (t, s) in zip(BAND_LABELS, bands, strict=True)
            ],
        },
        "grpo": _grpo(forecast, passes, settings),
        "length": length,
        "health": {"verdict": health.verdict, "findings": [f.as_dict() for f in health.findings]},
        "per_task": {
            "_ng_task_index": passes.task,
            "n": passes.n,
            "passes": passes.passes,
            "pass_rate": passes.rate,
            "low": passes.low,
            "high": passes.high,
            "band": passes.band,
            "band_probability": passes.band_probability,
            "settled": passes.settled,
            "binary": binary,
            "p_all_equal_default_group": p_equal,
            "mean_output_tokens": mean_tokens,
            "tokens_per_solve": per_solve,
            "cut_off": np.bincount(task_pos[cut & counted], minlength=len(task_ids)).astype(np.int64),
        },
        "per_rollout": {
            "_ng_task_index": columns.task,
            "_ng_rollout_index": columns.rollout,
            "reward": columns.reward,
            "passed": passed,
            "input_tokens": columns.input_tokens,
            "output_tokens": columns.output_tokens,
            "total_tokens": columns.total_tokens,
            "cut_off": cut,
            "turns": columns.turns,
            "tool_calls": columns.tool_calls,
        },
    }
    if policy is not None:  # what the rollouts show, beside the estimate the design allows
        with np.errstate(invalid="ignore", divide="ignore"):
            document["per_task"]["observed_pass_rate"] = np.where(
                passes.n > 0, passes.passes / np.maximum(passes.n, 1), np.nan
            )
    more = repeats_to_settle(
        passes.n, passes.passes, passes.prior, settings.settle_epsilon, settings.confidence
    )
    settle = np.where(passes.n == 0, np.nan, np.where(more < 0, np.inf, more.astype(np.float64)))
    reach = (more > 0) & ~passes.settled
    document["uncertainty"]["repeats_to_settle"] = int(more[reach].sum())
    document["uncertainty"]["unsettled_beyond_reach"] = int(np.count_nonzero((more < 0) & (passes.n > 0)))
    return Analysis(
        document,
        passes,
        health,
        forecast,
        task_pos,
        passed,
        counted,
        mean_tokens,
        per_solve,
        p_equal,
        repeats_to_settle=settle,
    )
