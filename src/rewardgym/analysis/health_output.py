"""Writing the health files: ``<stem>_rollout_verdicts.jsonl`` and ``<stem>_quality_summary.json``.

Contract: both files keep NeMo Gym 0.7.0's layout (docs/reference/health_check.md §3.2–3.3) — verdict
rows ``{_ng_task_index, _ng_rollout_index, rollout_id, verdict, findings, unobserved}`` sorted by (task,
rollout), findings in NeMo Gym's registry order (ours after its), ``unobserved`` the trajectory checks the
row could not evaluate (every one on a line without ``ng_trajectory``, so its verdict is ``unobserved``
unless a check found something), unreadable lines last as ``"__unreadable_record__:input-0:line-<n>"``
with every other NeMo Gym rollout check unobserved; the summary as
``{run: {ignored_checks, artifacts, verdicts, issues, stats}, tasks}`` with 2-space indent and no trailing
newline — plus one key of ours, ``rewardgym`` (overall verdict and the dataset findings). Both are written
to a handle the caller opened (its temp file), in pieces. :func:`health_summary` builds the summary dict
(pure).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import orjson

from rewardgym.analysis.check_ids import ROLLOUT_CHECKS, TASK_CHECKS
from rewardgym.analysis.columns import RolloutColumns
from rewardgym.analysis.health import DETAILS
from rewardgym.analysis.health_types import Health
from rewardgym.analysis.health_view import issue_counts
from rewardgym.analysis.trajectory_checks import TRAJECTORY_CHECKS

_FLAT = (
    b'{"_ng_task_index":%%d,"_ng_rollout_index":%%d,"rollout_id":"%%d-%%d",'
    b'"verdict":"%s","findings":[],"unobserved":%s}\n'
)
_ORDER = (
    "check_execution_error", "record_unreadable", "rollout_duplicate_identity", *TRAJECTORY_CHECKS,
    "no_extracted_answer", "rollout_cut_off", "reward_out_of_range",
)  # fmt: skip
"""NeMo Gym's rollout checks in its registry order, then ours: the order of a row's findings."""
_NEMO_ROLLOUT = _ORDER[:-3]
_BLOCK = 16384


def _verdict_row(columns: RolloutColumns, health: Health, i: int) -> bytes:
    task, rollout = int(columns.task[i]), int(columns.rollout[i])
    line: dict[str, dict[str, Any]] = {}
    for check in ROLLOUT_CHECKS:
        if health.rollout_flags[check][i]:
            detail = dict(DETAILS.get(check, {}))
            if check == "rollout_duplicate_identity":
                detail = {"duplicate_count": int(health.duplicate_count[i])}
            elif check == "model_call_missing_token_counts":
                names = ("prompt_tokens", "completion_tokens")
                counts = (columns.input_tokens[i], columns.output_tokens[i])
                detail = {"missing": [name for name, n in zip(names, counts, strict=True) if np.isnan(n)]}
            elif check == "reward_out_of_range":
                value = float(columns.reward[i])
                detail = {"reward": None if np.isnan(value) else value}
            line[check] = {"check": check, "detail": detail}
    evidence = health.trajectory.rows.get(i)
    traced = evidence.findings if evidence is not None else []
    findings = []
    for check in _ORDER:
        if check in line:
            findings.append(line[check])
        findings.extend(f for f in traced if f["check"] == check)
    unobserved = health.trajectory.unobserved(i, health.ignored)
    row = {
        "_ng_task_index": task,
        "_ng_rollout_index": rollout,
        "rollout_id": evidence.rollout_id if evidence and evidence.rollout_id else f"{task}-{rollout}",
        "verdict": "unhealthy" if findings else "unobserved" if unobserved else "healthy",
        "findings": findings,
        "unobserved": unobserved,
    }
    return orjson.dumps(row) + b"\n"


def write_verdicts(
    handle: IO[bytes],
    columns: RolloutColumns,
    health: Health,
    unreadable: list[tuple[int, str]],
    source: str,
) -> None:
    """One verdict row per rollout line (see module doc), written to ``handle`` block by block."""
    special = health.unhealthy
    if health.trajectory.rows:
        special = special.copy()
        special[list(health.trajectory.rows)] = True
    default = health.trajectory.unobserved(-1, health.ignored)
    flat = _FLAT % (b"unobserved" if default else b"healthy", orjson.dumps(default))
    batch: list[bytes] = []
    previous = 0
    # Rows without a finding or a trajectory between two others are written from a template, a run at a
    # time: one ``%`` of the template repeated over a block's interleaved (task, rollout, task, rollout)
    # numbers costs a third less than one ``%`` per row.
    for i in [*np.flatnonzero(special).tolist(), len(columns)]:
        for low in range(previous, i, _BLOCK):
            high = min(i, low + _BLOCK)
            block = np.empty((high - low, 4), np.int64)
            block[:, 0] = block[:, 2] = columns.task[low:high]
            block[:, 1] = block[:, 3] = columns.rollout[low:high]
            handle.write((flat * (high - low)) % tuple(block.ravel().tolist()))
        if i < len(columns):
            handle.write(_verdict_row(columns, health, i))  # the handle buffers
        previous = i + 1
    for line, error in sorted(unreadable):
        key = f"__unreadable_record__:input-0:line-{line}"
        batch.append(
            orjson.dumps(
                {
                    "_ng_task_index": key,
                    "_ng_rollout_index": 0,
                    "rollout_id": f"{key}-0",
                    "verdict": "unhealthy",
                    "findings": [
                        {
                            "check": "record_unreadable",
                            "locator": {"source_file": source, "line": line},
                            "detail": {"reason": "rollout record is unreadable", "error": error},
                        }
                    ],
                    "unobserved": [
                        c for c in _NEMO_ROLLOUT if c != "record_unreadable" and c not in health.ignored
                    ],
                }
            )
            + b"\n"
        )
    handle.write(b"".join(batch))


def health_summary(columns: RolloutColumns, health: Health, unreadable: int) -> dict[str, Any]:
    """The quality summary (see module doc)."""
    records = len(columns) + unreadable
    bad = health.unhealthy
    unhealthy = int(np.count_nonzero(bad)) + unreadable
    unobserved = int(np.count_nonzero(health.unobserved_rows(bad)))
    issues = issue_counts(health, unreadable)  # the same counts the CLI and the report show
    tasks_n = health.task_ids.shape[0]
    coverage = {c: {"evaluated": records, "unobserved": 0, "ignored": 0} for c in ROLLOUT_CHECKS}
    coverage.update({c: {"evaluated": records, "unobserved": 0, "ignored": 0} for c in _NEMO_ROLLOUT})
    coverage.update({c: {"evaluated": tasks_n, "unobserved": 0, "ignored": 0} for c in TASK_CHECKS})
    coverage["collection_failures"] = {"evaluated": 1, "unobserved": 0, "ignored": 0}
    _trajectory_coverage(coverage, health, len(columns), unreadable)
    for check in health.ignored:  # counted once per record (per task for task checks), as NeMo Gym does
        if check in coverage:
            counted = coverage[check]
            counted["ignored"] = counted["evaluated"] + counted["unobserved"]
            counted["evaluated"] = counted["unobserved"] = 0
    out_tokens = columns.output_tokens[np.isfinite(columns.output_tokens)]
    in_tokens = columns.input_tokens[np.isfinite(columns.input_tokens)]
    tasks = _task_entries(columns, health, bad)
    stats = _capture_stats(health)
    return {
        "run": {
            "ignored_checks": list(health.ignored),
            "artifacts": {"records": records, "captures": stats.pop("captures"), "coverage": coverage},
            "verdicts": {
                "healthy": records - unhealthy - unobserved,
                "unhealthy": unhealthy,
                "unobserved": unobserved,
            },
            "issues": issues,
            "stats": {
                "model_call_errors": stats["model_call_errors"],
                "duplicated_calls": stats["duplicated_calls"],
                "tokens": {
                    "prompt": int(in_tokens.sum()),
                    "completion": int(out_tokens.sum()),
                    "capture_prompt": stats["capture_prompt"],
                    "capture_completion": stats["capture_completion"],
                },
            },
        },
        "tasks": tasks,
        "rewardgym": {"verdict": health.verdict, "findings": [f.as_dict() for f in health.findings]},
    }


def _trajectory_coverage(
    coverage: dict[str, dict[str, int]], health: Health, lines: int, unreadable: int
) -> None:
    """NeMo Gym's coverage of its trajectory checks: unobserved on every line that could not evaluate them
    (every line without a trajectory) and on unreadable lines."""
    counts = dict.fromkeys(TRAJECTORY_CHECKS, lines - len(health.trajectory.rows))
    for checks in health.trajectory.rows.values():
        for check in checks.unobserved:
            counts[check] += 1
    for check, count in counts.items():
        coverage[check]["unobserved"] = count + unreadable
        coverage[check]["evaluated"] = lines - count
    for check in ("check_execution_error", "rollout_duplicate_identity"):
        coverage[check]["unobserved"], coverage[check]["evaluated"] = unreadable, lines


def _capture_stats(health: Health) -> dict[str, Any]:
    """The summary's ``stats`` read from the captured calls (docs/reference/health_check.md §2.4)."""
    rows = list(health.trajectory.rows.values())
    by_status: dict[str, int] = {}
    for checks in rows:
        for status, count in checks.errors_by_status.items():
            by_status[status] = by_status.get(status, 0) + count
    return {
        "captures": sum(1 for c in rows if c.calls),
        "model_call_errors": {
            "total": sum(c.failed_calls for c in rows),
            "by_status": dict(sorted(by_status.items())),
            "rollouts_affected": sum(1 for c in rows if c.failed_calls),
            "ended_on_error": sum(1 for c in rows if c.ended_on_error),
        },
        "duplicated_calls": {
            "replayed": sum(c.duplicated for c in rows),
            "rollouts": sum(1 for c in rows if c.duplicated),
        },
        "capture_prompt": sum(c.capture_prompt for c in rows),
        "capture_completion": sum(c.capture_completion for c in rows),
    }


_POWERS_OF_TEN = 10 ** np.arange(19, dtype=np.int64)


def _decimal_order(ids: np.ndarray) -> np.ndarray:
    """The order of ``ids`` by their decimal strings ("-1" < "-10" < "-2" < "0" < "1" < "10" < "2"), as
    Python's ``sorted`` of the strings gives it: by sign, then the digits left-aligned, then length."""
    if ids.shape[0] and (
        int(ids.max()) >= 10**18 or int(ids.min()) <= -(10**18)
    ):  # too wide to align in 64 bits: by the strings
        return np.argsort(ids.astype(str), kind="stable")
    magnitude = np.abs(ids)
    digits = np.maximum(np.searchsorted(_POWERS_OF_TEN, magnitude, side="right"), 1)
    aligned = magnitude * _POWERS_OF_TEN[18 - digits]
    return np.lexsort((digits, aligned, ids >= 0))


@dataclass(frozen=True)
class TaskEntries:
    """The summary's ``tasks`` in NeMo Gym's order (task ids by their string form: "10" before "2"), as
    columns; serialised by :func:`summary_pieces` from a template, a block at a time, without a dict or a
    tuple per task (250,000 of them cost a large part of a second)."""

    ids: np.ndarray
    repeats: np.ndarray
    healthy: np.ndarray
    unhealthy: np.ndarray
    unobserved: np.ndarray
    flags: dict[int, list[str]]
    """Position (in this order) → the task's flags; only tasks that have some."""

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def as_dict(self) -> dict[str, Any]:
        return {
            str(key): {"repeats": n, "healthy": h, "unhealthy": u, "unobserved": o,
                       "flags": self.flags.get(k, [])}
            for k, (key, n, h, u, o) in enumerate(
                zip(self.ids.tolist(), self.repeats.tolist(), self.healthy.tolist(), self.unhealthy.tolist(),
                    self.unobserved.tolist(), strict=True)
            )
        }  # fmt: skip

    def pieces(self) -> Iterator[bytes]:
        """The entries as ``summary_pieces`` writes them (comma-separated), :data:`_BLOCK` at a time."""
        table = np.empty((len(self), 5), np.int64)
        table[:, 0], table[:, 1], table[:, 2], table[:, 3], table[:, 4] = (
            self.ids,
            self.repeats,
            self.healthy,
            self.unhealthy,
            self.unobserved,
        )
        flagged = sorted(self.flags)
        previous = 0
        first = True
        for stop in [*flagged, len(self)]:
            for low in range(previous, stop, _BLOCK):  # a run of tasks without flags: one template
                high = min(stop, low + _BLOCK)
                plain = (_PLAIN_ENTRY * (high - low))[1:] % tuple(table[low:high].ravel().tolist())
                yield plain if first else b"," + plain
                first = False
            if stop < len(self):
                key, n, h, u, o = table[stop].tolist()
                entry = _ENTRY % (str(key).encode(), n, h, u, o, _flags(self.flags[stop]))
                yield entry if first else b"," + entry
                first = False
            previous = stop + 1


def _task_entries(columns: RolloutColumns, health: Health, bad: np.ndarray) -> TaskEntries:
    # The failure-only tasks are disjoint from ``task_ids`` (see health.py), so every key is unique.
    n_tasks = health.task_ids.shape[0]
    ids = np.concatenate((health.task_ids, health.failure_tasks)).astype(np.int64)
    repeats = np.zeros(ids.shape[0], np.int64)
    sick = np.zeros(ids.shape[0], np.int64)
    unseen = np.zeros(ids.shape[0], np.int64)
    flags: dict[int, list[str]] = {
        k: ["task_no_successful_model_calls"] for k in range(n_tasks, ids.shape[0])
    }
    if n_tasks:
        starts = np.flatnonzero(np.concatenate(([True], columns.task[1:] != columns.task[:-1])))
        repeats[:n_tasks] = np.diff(np.append(starts, len(columns)))
        sick[:n_tasks] = np.add.reduceat(bad.astype(np.int64), starts)
        unseen[:n_tasks] = np.add.reduceat(health.unobserved_rows(bad).astype(np.int64), starts)
        for check in TASK_CHECKS:
            for k in np.flatnonzero(health.task_flags[check]).tolist():
                flags.setdefault(k, []).append(check)
    order = _decimal_order(ids)
    position = np.empty(ids.shape[0], np.int64)
    position[order] = np.arange(ids.shape[0])
    return TaskEntries(
        ids=ids[order],
        repeats=repeats[order],
        healthy=(repeats - sick - unseen)[order],
        unhealthy=sick[order],
        unobserved=unseen[order],
        flags={int(position[k]): value for k, value in flags.items()},
    )


_ENTRY = (
    b'\n    "%s": {'
    b'\n      "repeats": %d,'
    b'\n      "healthy": %d,'
    b'\n      "unhealthy": %d,'
    b'\n      "unobserved": %d,'
    b'\n      "flags": %s'
    b"\n    }"
)
_PLAIN_ENTRY = b"," + (_ENTRY.replace(b'"%s"', b'"%d"').replace(b"%s", b"[]"))
"""One entry without flags, its key written with ``%d`` (a leading comma, dropped from a run's first)."""


def _flags(flags: list[str]) -> bytes:
    if not flags:
        return b"[]"
    return b"[" + b",".join(b'\n        "' + f.encode() + b'"' for f in flags) + b"\n      ]"


def summary_pieces(summary: dict[str, Any]) -> Iterator[bytes]:
    """The summary as orjson indents it (2 spaces, no trailing newline), in pieces; the tasks written from
    a template, :data:`_BLOCK` at a time (at 250,000 tasks the whole text is 31 MB)."""
    tasks = summary["tasks"]
    if not isinstance(tasks, TaskEntries):
        yield orjson.dumps(summary, option=orjson.OPT_INDENT_2)
        return
    yield orjson.dumps({"run": summary["run"]}, option=orjson.OPT_INDENT_2)[:-2]
    yield b',\n  "tasks": {'
    yield from tasks.pieces()
    yield b"\n  }" if len(tasks) else b"}"
    for key, value in summary.items():
        if key not in ("run", "tasks"):
            nested = orjson.dumps(value, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n  ")
            yield b',\n  "' + key.encode() + b'": ' + nested
    yield b"\n}"


def summary_bytes(summary: dict[str, Any]) -> bytes:
    """:func:`summary_pieces` joined."""
    return b"".join(summary_pieces(summary))


def write_summary(handle: IO[bytes], summary: dict[str, Any]) -> None:
    """Write the summary to ``handle`` piece by piece."""
    for piece in summary_pieces(summary):
        handle.write(piece)
