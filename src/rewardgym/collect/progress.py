"""Live progress of a collection: a rich bar on a terminal, one plain line per percent elsewhere.

Shows done/total, rate, ETA, failures and the running mean reward of each agent.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class RunningMeans:
    """Running mean of ``reward`` per agent."""

    def __init__(self) -> None:
        self._sums: dict[str, float] = {}
        self._counts: dict[str, int] = {}

    def add(self, agent: str, reward: float) -> None:
        self._sums[agent] = self._sums.get(agent, 0.0) + reward
        self._counts[agent] = self._counts.get(agent, 0) + 1

    def describe(self) -> str:
        return "  ".join(f"{a}: {self._sums[a] / self._counts[a]:.3f}" for a in sorted(self._counts))

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {
            a: {"mean/reward": self._sums[a] / self._counts[a], "count": self._counts[a]}
            for a in self._counts
        }


class CollectionProgress:
    """Progress reporting; ``live`` selects the bar (default: when the stream is a terminal)."""

    def __init__(
        self, total: int, already_done: int, *, stream: IO[str] | None = None, live: bool | None = None
    ):
        self.total = total
        self.done = already_done
        self.failed = 0
        self.retries = 0
        self.means = RunningMeans()
        self._stream = stream or sys.stdout
        self._live = self._stream.isatty() if live is None else live
        self._started = time.monotonic()
        self._start_done = already_done
        self._last_percent = -1
        self._progress: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> CollectionProgress:
        if self._live:
            self._progress = Progress(
                TextColumn("Collecting rollouts"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                TextColumn("{task.fields[extra]}"),
                console=Console(file=self._stream),
                transient=False,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(
                "collect", total=self.total, completed=self.done, rate="", extra=""
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._refresh()
            self._progress.__exit__(None, None, None)

    def rate(self) -> float:
        elapsed = time.monotonic() - self._started
        return (self.done - self._start_done) / elapsed if elapsed > 0 else 0.0

    def success(self, agent: str, reward: float) -> None:
        self.done += 1
        self.means.add(agent, reward)
        self._tick()

    def failure(self) -> None:
        self.done += 1
        self.failed += 1
        self._tick()

    def retry(self) -> None:
        self.retries += 1

    def grow(self, rollouts: int) -> None:
        """More rollouts to do (an ``--adaptive`` round)."""
        self.total += rollouts
        if self._progress is not None:
            self._progress.update(self._task, total=self.total)

    def _extra(self) -> str:
        parts = []
        if self.failed:
            parts.append(f"failed {self.failed}")
        if self.retries:
            parts.append(f"retries {self.retries}")
        means = self.means.describe()
        if means:
            parts.append(f"mean reward {means}")
        return "  ".join(parts)

    def _refresh(self) -> None:
        if self._progress is not None:
            self._progress.update(
                self._task, completed=self.done, rate=f"{self.rate():.1f}/s", extra=self._extra()
            )

    def _tick(self) -> None:
        if self._progress is not None:
            self._refresh()
            return
        percent = int(100 * self.done / self.total) if self.total else 100
        if percent != self._last_percent:
            self._last_percent = percent
            elapsed = time.monotonic() - self._started
            line = (
                f"Collected {self.done}/{self.total} rollouts ({percent}%) "
                f"in {elapsed:.1f}s, {self.rate():.1f}/s"
            )
            extra = self._extra()
            self._stream.write(f"{line}  {extra}\n" if extra else f"{line}\n")
            self._stream.flush()
