"""From sources and options to the dataset's bytes and the counts of its manifest (no writing).

Contract of :func:`build`: reads the sources (:func:`rewardgym.dataset.sources.read_tasks`), computes
per task the analysis' numbers — pass rate (the design's estimate: s / n pooled over the profiles, or for
tasks from an adaptive run the mean of the runs' unbiased estimates), 95 % Jeffreys interval, band, and
settled from the posterior under the prior fitted to the selected pool (the functions of
:mod:`rewardgym.analysis.uncertainty`, with ``settle_epsilon``) —, selects and orders
(:func:`rewardgym.dataset.select.select_indices`) and returns the dataset as bytes: one compact JSON
row per line, the training row in its original key order, plus ``options.annotate`` when set. The same
sources and options give the same bytes. Errors: a selection that keeps no task (nothing is written),
``--drop-flagged`` without a health file for every source, an ``--annotate`` key a row already has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from rewardgym.analysis.uncertainty import numbers_from_counts
from rewardgym.dataset.options import SelectOptions
from rewardgym.dataset.select import REASONS, Selection, Stats, select_indices
from rewardgym.dataset.sources import ReadResult, Source, Task, read_tasks
from rewardgym.errors import DataError


@dataclass(frozen=True)
class Built:
    data: bytes
    rows: int
    read: ReadResult
    selection: Selection
    counts: dict[str, Any]
    stages: list[dict[str, Any]]


def _groups(labels: list[str]) -> np.ndarray:
    ids: dict[str, int] = {}
    return np.array([ids.setdefault(label, len(ids)) for label in labels], np.int64)


def _annotation(
    task: Task, i: int, numbers: dict[str, np.ndarray], stage: int | None, health: bool
) -> dict[str, Any]:
    from rewardgym.profile import BAND_LABELS

    note: dict[str, Any] = {
        "pass_rate": float(numbers["rate"][i]),
        "low": float(numbers["low"][i]),
        "high": float(numbers["high"][i]),
        "passes": task.passes,
        "repeats": task.n,
        "band": BAND_LABELS[int(numbers["band"][i])],
        "settled": bool(numbers["settled"][i]),
    }
    if stage is not None:
        note["stage"] = stage + 1
    if health:
        note["flags"] = sorted(task.flags)
    return note


def _counts(
    tasks: list[Task], numbers: dict[str, np.ndarray], selection: Selection, domains: list[str], field: str
) -> dict[str, Any]:
    from rewardgym.profile import BAND_LABELS

    kept = selection.dropped == -1
    per_band: dict[str, dict[str, int]] = {}
    for band, label in [(-1, "unmeasured"), *enumerate(BAND_LABELS)]:
        inside = numbers["band"] == band
        if band == -1 and not inside.any():
            continue
        per_band[label] = {
            "kept": int(np.count_nonzero(inside & kept)),
            "dropped": int(np.count_nonzero(inside & ~kept)),
        }
    values: dict[str, dict[str, int]] = {}
    for label, keep in zip(domains, kept.tolist(), strict=True):
        entry = values.setdefault(label, {"kept": 0, "dropped": 0})
        entry["kept" if keep else "dropped"] += 1
    reasons = {
        reason: int(np.count_nonzero(selection.dropped == code)) for code, reason in enumerate(REASONS)
    }
    return {
        "tasks": len(tasks),
        "kept": int(np.count_nonzero(kept)),
        "rows": int(selection.order.shape[0]),
        "dropped": int(np.count_nonzero(~kept)),
        "dropped_by_reason": {k: v for k, v in reasons.items() if v},
        "per_band": per_band,
        "per_domain": {"field": field, "values": dict(sorted(values.items()))},
    }


def _stages(selection: Selection, rate: np.ndarray) -> list[dict[str, Any]]:
    if selection.stage is None:
        return []
    out = []
    for stage in range(int(selection.stage.max(initial=-1)) + 1):
        rows = selection.order[selection.stage == stage]
        entry: dict[str, Any] = {"stage": stage + 1, "rows": int(rows.shape[0])}
        if selection.stage_means:
            entry["target_mean"] = selection.stage_means[stage]
        entry["mean_pass_rate"] = float(rate[rows].mean()) if rows.shape[0] else None
        out.append(entry)
    return out


def build(sources: list[Source], options: SelectOptions) -> Built:
    """The dataset and its counts (see module doc)."""
    options.validate()
    needs_health = (
        ("--drop-flagged", options.drop_flagged),
        ("--drop-unhealthy-rollouts", options.drop_unhealthy_rollouts),
    )
    for flag in [name for name, on in needs_health if on][:1]:
        for source in sources:
            if source.health is None:
                raise DataError(
                    f"{flag}: no health file beside '{source.profile}' (its *_quality_summary.json); "
                    "run 'gym eval analyze' on that run first"
                )
    fields = tuple(dict.fromkeys(f for f in (options.domain_field, options.by, options.stratify) if f))
    read = read_tasks(
        sources,
        pass_threshold=options.pass_threshold,
        duplicates=options.duplicates,
        drop_run_params=options.drop_run_params,
        fields=fields,
        annotate=options.annotate,
    )
    tasks = read.tasks
    n = np.array([t.n for t in tasks], np.int64)
    s = np.array([t.passes for t in tasks], np.int64)
    estimate = np.array([t.rate for t in tasks], np.float64)
    passes = numbers_from_counts(
        np.arange(len(tasks), dtype=np.int64), n, s, epsilon=options.settle_epsilon, estimate=estimate
    )
    rate, band = passes.rate, passes.band
    numbers = {
        "rate": rate,
        "low": passes.low,
        "high": passes.high,
        "band": band,
        "settled": passes.settled,
    }
    column = {name: i for i, name in enumerate(fields)}

    def labels(name: str) -> list[str]:
        return [t.labels[column[name]] for t in tasks]

    domains = labels(options.domain_field)
    stats = Stats(
        rate=rate,
        band=band,
        settled=passes.settled,
        flagged=np.array([bool(t.flags) for t in tasks], np.bool_),
        unhealthy_rollouts=np.array([t.unhealthy > 0 for t in tasks], np.bool_) if read.health_read else None,
        by=None if options.by is None else _groups(labels(options.by)),
        strata=None if options.stratify is None else _groups(labels(options.stratify)),
    )
    selection = select_indices(stats, options)
    if selection.order.shape[0] == 0:
        reasons = ", ".join(
            f"{reason} {int(np.count_nonzero(selection.dropped == code))}"
            for code, reason in enumerate(REASONS)
            if np.any(selection.dropped == code)
        )
        raise DataError(
            f"no task is left to write: all {len(tasks)} were dropped ({reasons}); nothing written"
        )
    lines = []
    stages = selection.stage.tolist() if selection.stage is not None else [None] * selection.order.shape[0]
    for i, stage in zip(selection.order.tolist(), stages, strict=True):
        task = tasks[i]
        if options.annotate is None:
            lines.append(task.data + b"\n")
            continue
        # The row is a compact JSON object: the annotation goes in before its closing brace.
        note = (
            orjson.dumps(options.annotate)
            + b":"
            + orjson.dumps(_annotation(task, i, numbers, stage, read.health_read))
        )
        lines.append(task.data[:-1] + (b"," if len(task.data) > 2 else b"") + note + b"}\n")
    counts = _counts(tasks, numbers, selection, domains, options.domain_field)
    counts = {"profile_rows": read.rows_read, "merged_duplicates": read.merged, **counts}
    if read.health_read:  # flags are known for every task: say how many kept tasks carry one
        counts["kept_with_flags"] = int(np.count_nonzero(stats.flagged & (selection.dropped == -1)))
        if stats.unhealthy_rollouts is not None:
            kept_sick = stats.unhealthy_rollouts & (selection.dropped == -1)
            counts["kept_with_unhealthy_rollouts"] = int(np.count_nonzero(kept_sick))
    return Built(b"".join(lines), len(lines), read, selection, counts, _stages(selection, rate))
