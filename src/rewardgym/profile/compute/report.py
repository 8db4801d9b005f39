"""Our addition to the printed summary: tasks by pass-rate band and the mean reward with its interval.

Contract of :func:`task_summary`:

- a task's *pass rate* is its ``mean/reward`` (the fraction of successful rollouts for 0/1 rewards);
- bands: ``0 %``, ``(0–20 %]``, ``(20–40 %]``, ``(40–60 %]``, ``(60–80 %]``, ``(80–100 %)``, ``100 %``
  — counted over the per-task rows (per (task, agent) rows with fan-out). When some task's mean reward
  lies outside [0, 1] the rewards are not pass rates and no bands are given;
- the mean reward is the mean of the per-task mean rewards (each task weighs the same), with a 95 %
  interval over tasks (tasks, not rollouts, are the independent units); no interval for fewer than two
  tasks. The interval is the Student-t interval, kept inside the reward range when the rewards are pass
  rates (every task mean in [0, 1]) — clipping never drops a value the range allows, so the coverage is
  the t-interval's. When every task has the same mean the t-interval has width 0, which no finite
  sample supports: then, every task at 0 (or at 1), the exact bound [0, 1 − 0.025^(1/T)] — if the mean
  pass rate were μ, all T tasks would show no pass with probability at most (1 − μ)^T (concavity) —,
  otherwise Hoeffding's interval for a mean of T values in the range;
- tasks without a reward value are not counted.
"""

from __future__ import annotations

import math
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
    """95 % interval of ``mean_reward`` across tasks (None for fewer than two tasks)."""
    method: str = "t-interval"
    """How the interval was made: ``t-interval`` (clipped to [0, 1] for pass rates), ``exact bound`` or
    ``Hoeffding interval`` (see module doc)."""


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


def mean_interval(rates: np.ndarray, bounded: bool) -> tuple[float, float, str]:
    """The 95 % interval of the mean of ``rates`` (finite, at least two; see module doc). ``bounded``:
    the values are pass rates, in [0, 1]."""
    n = len(rates)
    mean = float(np.sum(rates)) / n
    sem = float(np.std(rates, ddof=1)) / n**0.5
    if sem > 0:
        half = t_quantile(n - 1, (1.0 + CONFIDENCE) / 2) * sem
        low, high = mean - half, mean + half
        return (max(low, 0.0), min(high, 1.0), "t-interval") if bounded else (low, high, "t-interval")
    if not bounded:
        return mean, mean, "t-interval"  # no range known: nothing bounds the spread the sample did not show
    tail = (1.0 - CONFIDENCE) / 2
    if mean == 0.0:
        return 0.0, 1.0 - tail ** (1.0 / n), "exact bound"
    if mean == 1.0:
        return tail ** (1.0 / n), 1.0, "exact bound"
    half = math.sqrt(math.log(2.0 / (1.0 - CONFIDENCE)) / (2.0 * n))
    return max(mean - half, 0.0), min(mean + half, 1.0), "Hoeffding interval"


def rates_summary(rates: np.ndarray) -> TaskSummary:
    """Bands and mean reward of per-task mean rewards (no NaN; see module doc)."""
    if len(rates) == 0:
        return TaskSummary(tasks=0, bands=None, mean_reward=None, interval=None)
    finite = bool(np.isfinite(rates).all())
    bounded = finite and rates.min() >= 0 and rates.max() <= 1
    bands = band_counts(rates) if bounded else None
    n = len(rates)
    mean = float(np.sum(rates)) / n
    if n < 2 or not finite:
        return TaskSummary(tasks=n, bands=bands, mean_reward=mean, interval=None)
    low, high, method = mean_interval(rates, bounded)
    return TaskSummary(tasks=n, bands=bands, mean_reward=mean, interval=(low, high), method=method)
