"""Rows appended to a materialized-inputs file after it was first written (adaptive rounds, curriculum
batches): reading them back from an offset, and cutting the one a killed run was appending. No numpy: a run
that is not adaptive imports this, not :mod:`rewardgym.collect.adaptive`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from rewardgym.collect.dispatch import Pending
from rewardgym.io.jsonl import TornLine, parse_line, repair_torn_tail

__all__ = ["repair_materialized_tail", "rows_from"]


def repair_materialized_tail(materialized: Path) -> TornLine | None:
    """Cut a row an adaptive round was appending when the run was killed (it was never dispatched)."""
    return repair_torn_tail(materialized)


def rows_from(materialized: Path, offset: int) -> Iterator[Pending]:
    """The rows appended at ``offset`` and after, as fresh rollouts to run."""
    with open(materialized, "rb") as handle:
        handle.seek(offset)
        for number, raw in enumerate(handle, start=1):
            yield Pending(parse_line(raw, materialized, number), 0)
