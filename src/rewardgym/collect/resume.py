"""What an earlier run of the same output already did, for ``--resume``.

Contract: a key (``_ng_task_index``, ``_ng_rollout_index``) is *done* when the rollouts file holds it; a torn
final line (a crash mid-write) counts as absent and is cut off before appending. The failures sidecar
gives the attempts each key used and which failures were permanent. A key is re-dispatched when it is not
done, not permanently failed, and used fewer attempts than the cap — or, with ``retry_failed``, whenever it
is not done.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardgym.collect.dispatch import Pending
from rewardgym.collect.outputs import RunOutputs
from rewardgym.errors import DataError
from rewardgym.io.jsonl import TornLine, atomic_write_jsonl, iter_jsonl, read_jsonl_tolerant
from rewardgym.protocol import keys


def key_of(row: dict[str, Any], where: str) -> tuple[int, int]:
    """The rollout key of a row, or a :class:`DataError` naming ``where``."""
    task = row.get(keys.TASK_INDEX)
    rollout = row.get(keys.ROLLOUT_INDEX)
    for name, value in ((keys.TASK_INDEX, task), (keys.ROLLOUT_INDEX, rollout)):
        if value is None:
            raise DataError(f"{where}: row has no '{name}'")
        if isinstance(value, bool) or not isinstance(value, int):
            raise DataError(f"{where}: '{name}' must be an integer, got {value!r}")
    assert isinstance(task, int) and isinstance(rollout, int)
    return task, rollout


@dataclass
class PriorRun:
    """Keys already handled by earlier runs of this output."""

    done: set[tuple[int, int]] = field(default_factory=set)
    attempts: dict[tuple[int, int], int] = field(default_factory=dict)
    permanent: set[tuple[int, int]] = field(default_factory=set)
    torn: TornLine | None = None


def load_prior_run(outputs: RunOutputs) -> PriorRun:
    prior = PriorRun()
    if outputs.rollouts.exists():
        rows, prior.torn = read_jsonl_tolerant(outputs.rollouts, what="Rollouts file")
        for number, row in enumerate(rows, start=1):
            prior.done.add(key_of(row, f"{outputs.rollouts}:{number}"))
    if outputs.failures.exists():
        rows, _ = read_jsonl_tolerant(outputs.failures, what="Failures file")
        for number, row in enumerate(rows, start=1):
            key = key_of(row, f"{outputs.failures}:{number}")
            prior.attempts[key] = prior.attempts.get(key, 0) + int(row.get("attempts", 1))
            if row.get("permanent"):
                prior.permanent.add(key)
    return prior


def pending_rows(
    materialized: Path, prior: PriorRun, *, max_attempts: int, retry_failed: bool
) -> Iterator[Pending]:
    """Stream the materialized rows that still need a rollout (constant memory beyond ``prior``)."""
    for number, row in iter_jsonl(materialized, what="Materialized inputs"):
        key = key_of(row, f"{materialized}:{number}")
        if key in prior.done:
            continue
        used = prior.attempts.get(key, 0)
        if retry_failed:
            yield Pending(row, 0)
            continue
        if key in prior.permanent or used >= max_attempts:
            continue
        yield Pending(row, used)


def drop_failures(failures: Path, done: set[tuple[int, int]]) -> int:
    """Rewrite the failures file (atomically) without the rows of keys that have since succeeded.

    Returns the number of rows dropped; a torn final line is dropped too (it was never a whole record).
    """
    if not failures.exists():
        return 0
    rows, torn = read_jsonl_tolerant(failures, what="Failures file")
    kept = [
        row for number, row in enumerate(rows, start=1) if key_of(row, f"{failures}:{number}") not in done
    ]
    dropped = len(rows) - len(kept)
    if dropped or torn is not None:
        atomic_write_jsonl(failures, kept)
    return dropped
