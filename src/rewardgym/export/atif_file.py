"""``gym eval export --format atif``: ``<stem>_atif.jsonl``, one ATIF trajectory per rollout line, in file
order (:func:`rewardgym.protocol.atif.trajectory_of`), written by temp file + rename; a malformed rollout line
is an error naming ``file:line`` and nothing is written."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import orjson

from rewardgym.io.jsonl import iter_jsonl
from rewardgym.io.outputs import atomic_writer, guard_outputs
from rewardgym.protocol.atif import trajectory_of

ATIF: Final = "atif"


def write_atif(rollouts: Path, out: Path | None = None) -> tuple[Path, int]:
    """Write the trajectories of ``rollouts``; (path, how many)."""
    target = (out or rollouts.parent) / f"{rollouts.stem}_atif.jsonl"
    guard_outputs([(target, "output")], [(rollouts, "--rollouts")])
    target.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with atomic_writer(target) as handle:
        for _number, row in iter_jsonl(rollouts, what="Rollouts file"):
            handle.write(orjson.dumps(trajectory_of(row)) + b"\n")
            count += 1
    return target, count
