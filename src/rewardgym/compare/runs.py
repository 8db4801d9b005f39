"""Reading one run into per-task pass counts and task keys.

Contract of :func:`read_run(path, inputs, how)`:

- ``path`` ending in ``_reward_profiling.jsonl`` is a **profile**: per row, the task key comes from its
  ``sample`` (the input row), the counts from its ``rollout_infos`` (a numeric ``reward`` is counted, and
  passes when ``>= pass_threshold``; the profiler already left masked rollouts out);
- any other path is a **rollouts file**, read with the analysis' reader
  (:func:`rewardgym.analysis.scan.scan_rollouts`) and counted as ``gym eval analyze`` counts (masked
  rollouts and rollouts without a numeric reward are not counted; :mod:`rewardgym.analysis.uncertainty`);
  its task keys come from its materialized inputs — ``inputs``, else the sibling
  ``<stem>_materialized_inputs.jsonl`` (as ``gym eval analyze`` finds it) — one key per task index, from
  the task's first row (the other rows of a task are skimmed, not parsed);
- per task, ``estimate``: the pass-rate estimate of the run's design (:mod:`rewardgym.analysis.design`):
  s / n, or for an adaptive run (its ``<stem>_run.json`` beside the file says so) the Rao–Blackwell
  estimate, unbiased under its stopping rule — so an adaptive run compared with a fixed run of the same
  policy shows no change;
- errors are :class:`~rewardgym.errors.DataError` naming the file (and line): a missing file, an
  unreadable rollout line, a rollout whose task has no input row, a profile row without ``sample`` /
  ``rollout_infos``, a row without the ``--task-key`` field;
- a key shared by several tasks of one run cannot be matched without guessing: those tasks are kept out
  (:attr:`RunTasks.ambiguous` lists them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rewardgym.analysis.columns import task_positions, task_segments
from rewardgym.analysis.design import adaptive_policy, design_estimates
from rewardgym.analysis.scan import scan_rollouts
from rewardgym.analysis.sidecars import output_paths
from rewardgym.analysis.sidecars import read_run as read_run_file
from rewardgym.analysis.uncertainty import pass_counts
from rewardgym.compare.identity import content_key, field_key, preview
from rewardgym.errors import DataError
from rewardgym.io.inputs import refuse_special_input
from rewardgym.io.jsonl import iter_jsonl, parse_line
from rewardgym.stats.arrays import BoolArray, FloatArray, IntArray

PROFILE_SUFFIX = "_reward_profiling.jsonl"
_INDEX = re.compile(rb'"_ng_task_index":\s*(-?\d+)\s*[,}]')


@dataclass(frozen=True)
class KeyRule:
    """How tasks are matched: by a field (``field`` set) or by content minus ``ignore`` paths."""

    field: tuple[str, ...] | None = None
    ignore: tuple[tuple[str, ...], ...] = ()
    pass_threshold: float = 1.0


@dataclass(frozen=True)
class RunTasks:
    """One run's tasks with unique keys (see module doc); arrays in the same task order."""

    path: Path
    kind: str
    """``"rollouts"`` or ``"profile"``."""
    inputs: Path | None
    key: list[bytes]
    """16-byte keys."""
    shown: list[str]
    """How each key is shown: the ``--task-key`` value, else the task's prompt preview."""
    task: IntArray
    n: IntArray
    passes: IntArray
    rollouts: int
    """Counted rollouts of the run."""
    ambiguous: list[dict[str, Any]]
    """Groups of tasks sharing one key: ``{"tasks": [...], "shown": ...}`` (kept out of matching)."""
    estimate: FloatArray
    """Per task, the design's pass-rate estimate (see module doc)."""
    design: str = "fixed"
    initial: int | None = None
    """Rollouts of an adaptive run's first round (what its estimate mostly rests on); None when fixed."""


def is_profile(path: Path) -> bool:
    return path.name.endswith(PROFILE_SUFFIX)


def _key(row: dict[str, Any], rule: KeyRule, where: str) -> tuple[bytes, str]:
    if rule.field is not None:
        return field_key(row, rule.field, where)
    return content_key(row, rule.ignore), preview(row)


def _require(path: Path, what: str) -> None:
    if not path.exists():
        raise DataError(f"{what} not found: '{path}'")
    if path.is_dir():
        raise DataError(f"{what} '{path}' is a directory, not a JSONL file")


@dataclass(frozen=True)
class _Design:
    estimate: FloatArray
    design: str
    initial: int | None


def _design(
    run_file: Path, task_pos: IntArray, tasks: int, rollout: IntArray, counted: BoolArray, passed: BoolArray,
    n: IntArray, s: IntArray, pass_threshold: float,
) -> _Design:  # fmt: skip
    policy = adaptive_policy(read_run_file(run_file))
    estimate = design_estimates(policy, task_pos, tasks, rollout, counted, passed, pass_threshold)
    if estimate is None or policy is None:
        with np.errstate(invalid="ignore", divide="ignore"):
            observed = np.asarray(np.where(n > 0, s / np.maximum(n, 1), np.nan), dtype=np.float64)
        return _Design(observed, "fixed", None)
    return _Design(estimate, "adaptive", policy.initial)


def _unique(
    path: Path, kind: str, inputs: Path | None, keys: list[bytes], shown: list[str], task: IntArray,
    n: IntArray, passes: IntArray, rollouts: int, design: _Design,
) -> RunTasks:  # fmt: skip
    first: dict[bytes, int] = {}
    groups: dict[bytes, list[int]] = {}
    for i, key in enumerate(keys):
        if first.setdefault(key, i) != i:
            groups.setdefault(key, [first[key]]).append(i)
    if not groups:
        return RunTasks(path, kind, inputs, keys, shown, task, n, passes, rollouts, [], design.estimate,
                        design.design, design.initial)  # fmt: skip
    ambiguous = [{"tasks": [int(task[i]) for i in at], "shown": shown[at[0]]} for at in groups.values()]
    keep = np.ones(len(keys), np.bool_)
    for at in groups.values():
        keep[at] = False
    kept = np.flatnonzero(keep).tolist()
    return RunTasks(
        path=path,
        kind=kind,
        inputs=inputs,
        key=[keys[i] for i in kept],
        shown=[shown[i] for i in kept],
        task=task[keep],
        n=n[keep],
        passes=passes[keep],
        rollouts=rollouts,
        ambiguous=ambiguous,
        estimate=design.estimate[keep],
        design=design.design,
        initial=design.initial,
    )


def _read_profile(path: Path, rule: KeyRule) -> RunTasks:
    _require(path, "Profile")
    keys: list[bytes] = []
    shown: list[str] = []
    tasks: list[int] = []
    ns: list[int] = []
    ss: list[int] = []
    # per counted rollout, for the design's estimate: task position, rollout index, passed
    positions: list[int] = []
    indices: list[int] = []
    passing: list[bool] = []
    for line, row in iter_jsonl(path, what="Profile"):
        where = f"{path}:{line}"
        task, sample, infos = row.get("_ng_task_index"), row.get("sample"), row.get("rollout_infos")
        if type(task) is not int or not isinstance(sample, dict) or not isinstance(infos, list):
            raise DataError(
                f"{where}: not a reward profile row (needs an integer '_ng_task_index', a 'sample' object "
                "and a 'rollout_infos' list; profiles come from 'gym eval profile')"
            )
        counted_infos = [i for i in infos if isinstance(i, dict) and type(i.get("reward")) in (int, float)]
        rewards: list[float] = [float(i["reward"]) for i in counted_infos]
        for position, info in enumerate(counted_infos):
            index = info.get("_ng_rollout_index")
            positions.append(len(tasks))
            indices.append(index if type(index) is int else position)
            passing.append(float(info["reward"]) >= rule.pass_threshold)
        key, label = _key({**sample, "_ng_task_index": task}, rule, where)
        keys.append(key)
        shown.append(label)
        tasks.append(task)
        ns.append(len(rewards))
        ss.append(sum(1 for r in rewards if r >= rule.pass_threshold))
    if not tasks:
        raise DataError(f"{path}: the profile has no task rows")
    n, s = np.array(ns, np.int64), np.array(ss, np.int64)
    run_file = path.with_name(path.name[: -len(PROFILE_SUFFIX)] + "_run.json")
    design = _design(
        run_file, np.array(positions, np.int64), len(tasks), np.array(indices, np.int64),
        np.ones(len(positions), np.bool_), np.array(passing, np.bool_), n, s, rule.pass_threshold,
    )  # fmt: skip
    return _unique(path, "profile", None, keys, shown, np.array(tasks, np.int64), n, s, sum(ns), design)


def _input_keys(inputs: Path, rule: KeyRule, *, skim: bool = True) -> dict[int, tuple[bytes, str]]:
    """Key of each task index, from its first row in the materialized inputs.

    Only a task's first row is needed, and the other repeats are most of the file: with ``skim``, a line
    whose last ``"_ng_task_index": N`` names a task already seen is skipped unparsed. That text can only
    mislead (a string value that contains it) by hiding a task — never by keying a row under a wrong
    task, since a kept row's index is the parsed one — and the caller re-reads without ``skim`` before
    it reports a task as missing."""
    found: dict[int, tuple[bytes, str]] = {}
    refuse_special_input(inputs, "Materialized inputs")
    with open(inputs, "rb") as handle:
        for line, raw in enumerate(handle, start=1):
            if skim:
                at = raw.rfind(b'"_ng_task_index":')
                seen = _INDEX.match(raw, at) if at >= 0 else None
                if seen is not None and int(seen[1]) in found:
                    continue
            row = parse_line(raw, inputs, line)
            task = row.get("_ng_task_index")
            if type(task) is not int:
                raise DataError(f"{inputs}:{line}: the row has no integer '_ng_task_index'")
            if task not in found:
                found[task] = _key(row, rule, f"{inputs}:{line}")
    return found


def _read_rollouts(path: Path, inputs: Path | None, rule: KeyRule) -> RunTasks:
    _require(path, "Rollouts file")
    if inputs is None:
        inputs = output_paths(path).materialized
        if not inputs.is_file():
            raise DataError(
                f"no materialized inputs beside '{path}' (expected '{inputs}'): tasks are matched by their "
                "input rows; pass --inputs, or compare the profiles (*_reward_profiling.jsonl)"
            )
    _require(inputs, "Materialized inputs")
    scan = scan_rollouts(path)
    if scan.unreadable:
        line, error = scan.unreadable[0]
        raise DataError(f"{path}:{line}: {error}")
    columns = scan.columns
    if len(columns) == 0:
        raise DataError(f"{path}: no rollouts to compare")
    counted = ~columns.masked & np.isfinite(columns.reward)
    with np.errstate(invalid="ignore"):
        passed = columns.reward >= rule.pass_threshold
    task, starts = task_segments(columns.task)
    n, s = pass_counts(starts, counted, passed)
    found = _input_keys(inputs, rule)
    missing = [t for t in task.tolist() if t not in found]
    if missing:
        found = _input_keys(inputs, rule, skim=False)
        missing = [t for t in task.tolist() if t not in found]
    if missing:
        raise DataError(
            f"{path}: {len(missing)} task(s) have no row in '{inputs}' (first: task {missing[0]}); "
            "are these the inputs of this run?"
        )
    # Tasks materialized but without any rollout stay out: there is nothing to compare for them.
    keys = [found[t][0] for t in task.tolist()]
    shown = [found[t][1] for t in task.tolist()]
    task_pos = task_positions(columns.task)
    design = _design(
        output_paths(path).run_file, task_pos, int(task.shape[0]), columns.rollout,
        counted, counted & passed, n, s, rule.pass_threshold,
    )  # fmt: skip
    return _unique(path, "rollouts", inputs, keys, shown, task, n, s, int(counted.sum()), design)


def read_run(path: Path, inputs: Path | None, rule: KeyRule) -> RunTasks:
    """One run's tasks (see module doc)."""
    if is_profile(path):
        if inputs is not None:
            raise DataError(f"'{path}' is a profile: it needs no --inputs (its rows carry the input row)")
        return _read_profile(path, rule)
    return _read_rollouts(path, inputs, rule)
