"""Matching tasks across runs by key; what does not match is reported, never paired by guess.

Contract of :func:`match_runs(runs)`:

- a task is *matched* when its key is in every run (keys are unique within a run: :mod:`.runs` keeps
  shared keys out); matched tasks come in the first run's task-index order, with each run's position
  of the task;
- a matched task with no counted rollout in some run cannot be compared and is left out
  (:attr:`Matching.no_rollouts`);
- per run, the tasks whose key is missing from some other run: their count and up to
  :data:`EXAMPLES` examples (task index and how the key is shown).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rewardgym.compare.runs import RunTasks
from rewardgym.stats.arrays import IntArray

EXAMPLES = 5


@dataclass(frozen=True)
class Matching:
    key: list[bytes]
    """Keys of the matched tasks."""
    position: list[IntArray]
    """Per run, the index of each matched task in that run's arrays."""
    unmatched: list[dict[str, Any]]
    """Per run: ``{"tasks": count, "examples": [{"task", "shown"}]}``."""
    no_rollouts: int
    """Matched tasks left out because some run counted no rollout for them."""

    @property
    def tasks(self) -> int:
        return len(self.key)

    @property
    def unmatched_total(self) -> int:
        return sum(int(u["tasks"]) for u in self.unmatched)


def match_runs(runs: list[RunTasks]) -> Matching:
    """Tasks present in every run (see module doc)."""
    # Dictionaries of the exact 16-byte keys: no sorting of byte strings, no truncated key.
    where = [{key: i for i, key in enumerate(run.key)} for run in runs]
    shared = set(where[0]).intersection(*where[1:])
    common = [key for key in runs[0].key if key in shared]
    position = [np.array([at[key] for key in common], np.int64) for at in where]
    unmatched = []
    for run in runs:
        alone = [i for i, key in enumerate(run.key) if key not in shared]
        examples = [{"task": int(run.task[i]), "shown": run.shown[i]} for i in alone[:EXAMPLES]]
        unmatched.append({"tasks": len(alone), "examples": examples})
    measured = np.ones(len(common), np.bool_)
    for run, at in zip(runs, position, strict=True):
        measured &= run.n[at] > 0
    # In the first run's task order, so the per-task columns read like that run's files.
    keep = np.flatnonzero(measured)
    keep = keep[np.argsort(runs[0].task[position[0][keep]], kind="stable")]
    return Matching(
        key=[common[i] for i in keep.tolist()],
        position=[at[keep] for at in position],
        unmatched=unmatched,
        no_rollouts=int((~measured).sum()),
    )
