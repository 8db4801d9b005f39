"""The ``compare.json`` document of two or more runs (pure: runs and matching in, a dict out).

Contract of :func:`compare_document(runs, labels, matching, settings)`:

- pairs: with ``against="baseline"`` every later run is compared with the first (A = run 1, B = run k);
  with ``against="previous"`` each run with the one before it. Every comparison uses the same matched
  tasks, so their numbers can be set side by side; Benjamini–Hochberg runs within each comparison;
- per run and matched task: ``task``, ``n``, ``passes``, ``rate`` (the design's estimate: s / n, or for an
  adaptive run the estimate unbiased under its stopping rule, :mod:`rewardgym.analysis.design`), ``low`` /
  ``high`` (Jeffreys interval at ``level``, :func:`rewardgym.analysis.uncertainty.jeffreys`) and ``band``
  (:func:`rewardgym.analysis.uncertainty.band_of` of the rate);
- per comparison: the overall block (:mod:`.stats`), counts per transition, observed directions, the
  band-to-band matrix, and per task ``p_value``, ``q_value``, ``p_b_better`` and ``transition``.

See ``docs/decide.md`` for every field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rewardgym.analysis.uncertainty import jeffreys
from rewardgym.compare import stats
from rewardgym.compare.match import Matching
from rewardgym.compare.runs import RunTasks
from rewardgym.profile import BAND_LABELS
from rewardgym.stats.bands import band_of
from rewardgym.stats.posterior import posterior
from rewardgym.stats.prior import fit_pool_prior

SCHEMA_VERSION = 1
POWER_DELTAS = (0.01, 0.02, 0.05, 0.1)


@dataclass(frozen=True)
class Settings:
    pass_threshold: float = 1.0
    level: float = 0.95
    fdr: float = 0.05
    replicates: int = 10_000
    seed: int = 0
    power: float = 0.8
    against: str = "baseline"
    task_key: str | None = None
    ignore_keys: tuple[str, ...] = ()


def power_sentence(overall: dict[str, Any], *, capital: bool = False) -> str:
    """What a comparison could have seen: its minimum detectable difference — for "no detectable change",
    what that statement is worth."""
    if overall["minimum_detectable_difference"] is None:
        text = (f"too few tasks to tell what this comparison could detect (fewer than {overall['min_tasks']} "
                "matched tasks)")  # fmt: skip
        return text[0].upper() + text[1:] if capital else text
    mdd = f"±{100 * overall['minimum_detectable_difference']:.1f} pp"
    power = f"{100 * overall['power']:.0f} %"
    if overall["verdict"] == "no detectable change":
        text = f"no change larger than {mdd} (a true difference of {mdd} is found with {power} power)"
    else:
        text = f"minimum detectable difference at {power} power: {mdd}"
    return text[0].upper() + text[1:] if capital else text


def pairs(runs: int, against: str) -> list[tuple[int, int]]:
    if against == "previous":
        return [(k - 1, k) for k in range(1, runs)]
    return [(0, k) for k in range(1, runs)]


def run_columns(run: RunTasks, at: np.ndarray, level: float) -> dict[str, np.ndarray]:
    n, s = run.n[at], run.passes[at]
    rate = run.estimate[at]
    low, high = jeffreys(n, s, level)
    # what the estimate mostly rests on: every rollout of a fixed run, an adaptive run's first round
    weight = n if run.initial is None else np.minimum(n, run.initial)
    return {"task": run.task[at], "n": n, "passes": s, "rate": rate, "low": low, "high": high,
            "band": band_of(rate), "estimate_rollouts": weight}  # fmt: skip


def _sampling_se(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    """The no-change SE of the mean difference (:func:`rewardgym.compare.stats.sampling_se`)."""
    n = a["n"] + b["n"]
    s = a["passes"] + b["passes"]
    variance = posterior(n, s, fit_pool_prior(n, s)).expectation_var()
    return stats.sampling_se(variance, a["estimate_rollouts"], variance, b["estimate_rollouts"])


def _comparison(
    a: dict[str, np.ndarray], b: dict[str, np.ndarray], settings: Settings
) -> tuple[dict[str, Any], dict[str, Any]]:
    p = stats.fisher_p(a["n"], a["passes"], b["n"], b["passes"])
    q = stats.bh_qvalues(p)
    better = stats.prob_b_better(a["n"], a["passes"], b["n"], b["passes"])
    significant = q <= settings.fdr
    code = stats.transitions(a["passes"], a["rate"], b["passes"], b["rate"], significant)
    d = b["rate"] - a["rate"]
    boot = stats.paired_bootstrap(d, settings.replicates, settings.seed, settings.level)
    tasks = int(d.shape[0])
    se0 = _sampling_se(a, b)
    enough = tasks >= stats.MIN_TASKS
    mdd = stats.minimum_detectable(se0, settings.level, settings.power, tasks) if enough else None
    power_at = (
        {f"{delta:g}": stats.power_at(delta, se0, settings.level, tasks) for delta in POWER_DELTAS}
        if enough
        else None
    )
    counts = np.bincount(code, minlength=len(stats.TRANSITIONS))
    overall = {
        "mean_a": float(a["rate"].mean()), "mean_b": float(b["rate"].mean()), "diff": boot.diff,
        "ci_low": boot.low, "ci_high": boot.high, "level": settings.level, "verdict": stats.verdict(boot),
        "se": boot.se, "bootstrap_replicates": boot.replicates, "seed": settings.seed,
        "distinct_differences": boot.distinct,
        "minimum_detectable_difference": mdd, "power": settings.power,
        "power_at": power_at, "sampling_se": se0, "min_tasks": stats.MIN_TASKS,
    }  # fmt: skip
    block = {
        "tasks": int(d.shape[0]),
        "overall": overall,
        "per_task_test": {
            "test": "fisher_exact_two_sided",
            "fdr": settings.fdr,
            "significant": int(significant.sum()),
        },
        "transitions": {name: int(counts[k]) for k, name in enumerate(stats.TRANSITIONS)},
        "observed": {"up": int((d > 0).sum()), "down": int((d < 0).sum()), "same": int((d == 0).sum())},
        "band_matrix": {
            "rows": "band in a",
            "columns": "band in b",
            "labels": list(BAND_LABELS),
            "counts": stats.band_matrix(a["band"], b["band"]),
        },
    }
    per_task = {"p_value": p, "q_value": q, "p_b_better": better, "transition": code}
    return block, per_task


def _run_entry(label: str, run: RunTasks, unmatched: dict[str, Any]) -> dict[str, Any]:
    ambiguous_tasks = sum(len(group["tasks"]) for group in run.ambiguous)
    return {
        "label": label, "kind": run.kind, "path": str(run.path),
        "inputs": None if run.inputs is None else str(run.inputs),
        "tasks": int(run.task.shape[0]) + ambiguous_tasks, "counted_rollouts": run.rollouts,
        "design": run.design,
        "unmatched_tasks": unmatched["tasks"], "unmatched_examples": unmatched["examples"],
        "ambiguous_tasks": ambiguous_tasks, "ambiguous_examples": run.ambiguous[:5],
    }  # fmt: skip


def compare_document(
    runs: list[RunTasks], labels: list[str], matching: Matching, settings: Settings
) -> dict[str, Any]:
    """The whole ``compare.json`` document (see module doc)."""
    columns = [run_columns(run, at, settings.level) for run, at in zip(runs, matching.position, strict=True)]
    comparisons = []
    per_comparison = []
    for i, j in pairs(len(runs), settings.against):
        block, per_task = _comparison(columns[i], columns[j], settings)
        comparisons.append({"a": labels[i], "b": labels[j], "a_run": i, "b_run": j, **block})
        per_comparison.append(per_task)
    first = runs[0]
    shown = [first.shown[k] for k in matching.position[0].tolist()]
    by = "content" if settings.task_key is None else f"field {settings.task_key}"
    return {
        "schema_version": SCHEMA_VERSION,
        "settings": {
            "pass_threshold": settings.pass_threshold, "level": settings.level, "fdr": settings.fdr,
            "bootstrap_replicates": settings.replicates, "seed": settings.seed, "power": settings.power,
            "against": settings.against, "task_key": settings.task_key,
            "ignore_keys": list(settings.ignore_keys), "per_task_test": "fisher_exact_two_sided",
        },
        "runs": [_run_entry(label, run, u) for label, run, u in zip(labels, runs, matching.unmatched,
                                                                    strict=True)],
        "matching": {"by": by, "matched_tasks": matching.tasks, "unmatched_tasks": matching.unmatched_total,
                     "matched_without_rollouts": matching.no_rollouts},
        "comparisons": comparisons,
        "transition_names": list(stats.TRANSITIONS),
        "per_task": {
            "key": [k.hex() for k in matching.key],
            "shown": shown,
            "runs": columns,
            "comparisons": per_comparison,
        },
    }  # fmt: skip
