"""The 95 % Student-t confidence interval NeMo Gym 0.7.0 attaches to repeat-level and across-repeat means.

Contract: :func:`t_interval(mean, sem, n)` is ``None`` for ``n <= 1``; ``(mean, mean)`` plus a
``UserWarning`` ("Standard error is 0 (all <n> values are identical) -- …") when ``sem == 0``; otherwise
``scipy.stats.t.interval(0.95, df=n-1, loc=mean, scale=sem)``, computed as scipy computes it
(``stdtrit(df, q) * scale + loc`` at ``q = (1 - 0.95) / 2`` and ``(1 + 0.95) / 2``), so the digits match.
The interval is not clipped. scipy is imported on first use (``scipy.special`` only, ~0.2 s).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from functools import cache

CONFIDENCE = 0.95

SEM_ZERO_WARNING = (
    "Standard error is 0 (all {n} values are identical) -- confidence interval collapses to a single point "
    "rather than being computed."
)


@cache
def _quantile_function() -> Callable[[float, float], float]:
    from scipy.special import stdtrit  # type: ignore[import-untyped]

    def quantile(df: float, q: float) -> float:
        return float(stdtrit(df, q))

    return quantile


def preload_in_background() -> threading.Thread:
    """Import scipy in a thread (the profiler does this while worker processes read the files)."""
    thread = threading.Thread(target=_quantile_function, name="scipy-preload", daemon=True)
    thread.start()
    return thread


def t_quantile(df: float, q: float) -> float:
    """Student-t quantile (inverse CDF) with ``df`` degrees of freedom at probability ``q``."""
    return _quantile_function()(df, q)


def t_interval(mean: float, sem: float, n: int) -> tuple[float, float] | None:
    """The 95 % t-interval of a mean of ``n`` values with standard error ``sem`` (see module doc)."""
    if n <= 1:
        return None
    if sem == 0:
        warnings.warn(SEM_ZERO_WARNING.format(n=n), UserWarning, stacklevel=2)
        return mean, mean
    df = n - 1
    low = t_quantile(df, (1.0 - CONFIDENCE) / 2) * sem + mean
    high = t_quantile(df, (1.0 + CONFIDENCE) / 2) * sem + mean
    return low, high
