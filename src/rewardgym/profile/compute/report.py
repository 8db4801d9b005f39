"""Our addition to the printed summary: tasks by pass-rate band and the mean reward with its interval.

Contract of :func:`task_summary`:

- a task's *pass rate* is its ``mean/reward`` (the fraction of successful rollouts for 0/1 rewards);
- bands: ``0 %``, ``(0–20 %]``, ``(20–40 %]``, ``(40–60 %]``, ``(60–80 %]``, ``(80–100 %)``, ``100 %``
  — counted over the per-task rows (per (task, agent) rows with fan-out). When some task's mean reward
  lies outside [0, 1] the rewards are not pass rates and no bands are given;
- the mean reward is the mean of the per-task mean rewards (each task weighs the same), with a 95 %
  Student-t interval over tasks (tasks, not rollouts, are the independent units); no interval for
  fewer than two tasks;
- tasks without a reward value are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rewardgym.profile.compute.profiler import Profile
from rewardgym.stats.tinterval import CONFIDENCE, t_quantile

BAND_LABELS = ("0 %", "(0–20 %]", "(20–40 %]", "(40–60 %]", "(60–80 %]", "(80–100 %)", "100 %")
"""Pass-rate bands, lowest first."""


@dataclass(frozen=True)
class TaskSummary:
    """Pass-rate bands over tasks and the mean reward across tasks."""

    tasks: int
    """Per-task rows with a reward value."""
    bands: tuple[int, ...] | None
    """Tasks per band of :data:`BAND_LABELS` (None when rewards are not within [0, 1])."""
    mean_reward: float | None
    """Mean of the per-task mean rewards (None without rewards)."""
    interval: tuple[float, float] | None
    """95 % t-interval of ``mean_reward`` across tasks (None for fewer than two tasks)."""


def band_counts(rates: np.ndarray) -> tuple[int, ...]:
    """Tasks per pass-rate band (rates within [0, 1])."""
    zero = int(np.count_nonzero(rates == 0))
    full = int(np.count_nonzero(rates == 1))
    inner = rates[(rates > 0) & (rates < 1)]
    edges = np.array([0.2, 0.4, 0.6, 0.8])
    # (0, 0.2] → 0, (0.2, 0.4] → 1, …, (0.8, 1) → 4
    which = np.searchsorted(edges, inner, side="left")
    middle = np.bincount(which, minlength=5)
    return (zero, *(int(c) for c in middle), full)


def task_summary(profile: Profile) -> TaskSummary:
    """Bands and mean reward of a profile (see module doc)."""
    stats = profile.statistics
    if "reward" not in stats.fields or len(stats.tasks) == 0:
        return TaskSummary(tasks=0, bands=None, mean_reward=None, interval=None)
    column = stats.fields.index("reward")
    rates = stats.tasks.stats.mean[:, column]
    return rates_summary(rates[~np.isnan(rates)])


def rates_summary(rates: np.ndarray) -> TaskSummary:
    """Bands and mean reward of per-task mean rewards (no NaN; see module doc)."""
    if len(rates) == 0:
        return TaskSummary(tasks=0, bands=None, mean_reward=None, interval=None)
    finite = bool(np.isfinite(rates).all())
    bands = band_counts(rates) if finite and rates.min() >= 0 and rates.max() <= 1 else None
    n = len(rates)
    mean = float(np.sum(rates)) / n
    interval: tuple[float, float] | None = None
    if n > 1 and finite:
        sem = float(np.std(rates, ddof=1)) / n**0.5
        half = t_quantile(n - 1, (1.0 + CONFIDENCE) / 2) * sem
        interval = (mean - half, mean + half)
    return TaskSummary(tasks=n, bands=bands, mean_reward=mean, interval=interval)
