"""Knobs of the profiler's parallel execution (defaults suit files from a few KB to several GB)."""

from __future__ import annotations

import os
from dataclasses import dataclass


def usable_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Tuning:
    """How the profiler splits its work across processes. Results never depend on these values."""

    workers: int | None = None
    """Worker processes for large inputs (None: one per usable core, at most 8; 1: no workers)."""
    chunk_bytes: int = 48 << 20
    """Target size of the byte ranges of a file that workers read."""
    parallel_from: int = 16 << 20
    """Total input size from which the files are read by workers."""
    parallel_groups: int = 20_000
    """Per-task rows from which ``<stem>_reward_profiling.jsonl`` is produced by workers."""
    piece_groups: int = 2048
    """Per-task rows in one piece of ``<stem>_reward_profiling.jsonl`` when it is written by workers."""

    def worker_count(self) -> int:
        """The number of worker processes to use."""
        if self.workers is not None:
            return max(1, self.workers)
        return max(1, min(usable_cores(), 8))
