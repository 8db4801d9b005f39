"""The 95 % Student-t confidence interval NeMo Gym 0.7.0 attaches to repeat-level and across-repeat means.

Contract: :func:`t_interval(mean, sem, n)` is ``None`` for ``n <= 1``; ``(mean, mean)`` when ``sem == 0``
(the numbers NeMo Gym 0.7.0 writes there, but without its ``UserWarning`` "Standard error is 0 …": identical
values are the normal case for a task a policy always or never solves, so the warning was only noise);
otherwise ``scipy.stats.t.interval(0.95, df=n-1, loc=mean, scale=sem)``, computed as scipy computes it
(``stdtrit(df, q) * scale + loc`` at ``q = (1 - 0.95) / 2`` and ``(1 + 0.95) / 2``), so the digits match.
The interval is not clipped. scipy's ``stdtrit`` is loaded on first use, without the rest of
``scipy.special`` (see :mod:`rewardgym.stats.special`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from rewardgym.stats.special import ufuncs

CONFIDENCE = 0.95


@cache
def _quantile_function() -> Callable[[float, float], float]:
    stdtrit: Any = ufuncs().stdtrit

    def quantile(df: float, q: float) -> float:
        return float(stdtrit(df, q))

    return quantile


def t_quantile(df: float, q: float) -> float:
    """Student-t quantile (inverse CDF) with ``df`` degrees of freedom at probability ``q``."""
    return _quantile_function()(df, q)


def t_interval(mean: float, sem: float, n: int) -> tuple[float, float] | None:
    """The 95 % t-interval of a mean of ``n`` values with standard error ``sem`` (see module doc)."""
    if n <= 1:
        return None
    if sem == 0:
        # All n values are equal: the interval is the point itself (scipy would return NaNs here).
        return mean, mean
    df = n - 1
    low = t_quantile(df, (1.0 - CONFIDENCE) / 2) * sem + mean
    high = t_quantile(df, (1.0 + CONFIDENCE) / 2) * sem + mean
    return low, high
