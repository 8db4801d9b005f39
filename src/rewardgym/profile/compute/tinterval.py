"""The 95 % Student-t confidence interval NeMo Gym 0.7.0 attaches to repeat-level and across-repeat means.

Contract: :func:`t_interval(mean, sem, n)` is ``None`` for ``n <= 1``; ``(mean, mean)`` when ``sem == 0``
(the numbers NeMo Gym 0.7.0 writes there, but without its ``UserWarning`` "Standard error is 0 …": identical
values are the normal case for a task a policy always or never solves, so the warning was only noise);
otherwise ``scipy.stats.t.interval(0.95, df=n-1, loc=mean, scale=sem)``, computed as scipy computes it
(``stdtrit(df, q) * scale + loc`` at ``q = (1 - 0.95) / 2`` and ``(1 + 0.95) / 2``), so the digits match.
The interval is not clipped. scipy's ``stdtrit`` is loaded on first use, without the rest of
``scipy.special`` (≈ 0.05 s instead of ≈ 0.45 s, see :func:`_stdtrit_alone`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Callable
from functools import cache
from typing import Any

CONFIDENCE = 0.95


@cache
def _quantile_function() -> Callable[[float, float], float]:
    special = sys.modules.get("scipy.special")
    stdtrit: Any
    if special is not None:
        stdtrit = special.stdtrit
    else:
        try:
            stdtrit = _stdtrit_alone()
        except Exception:  # pragma: no cover - a scipy whose compiled module needs its package first
            stdtrit = importlib.import_module("scipy.special").stdtrit

    def quantile(df: float, q: float) -> float:
        return float(stdtrit(df, q))

    return quantile


def _stdtrit_alone() -> Any:
    """``scipy.special.stdtrit`` without running ``scipy/special/__init__.py``, which loads scipy's
    array-API layer and through it numpy.f2py, numpy.testing and more (≈ 0.4 s of CPU; this takes ≈ 0.03 s):
    the compiled module that defines it is imported under a bare stand-in for its package, removed again
    at once — so a later ``import scipy.special`` runs as usual, and finds this very module."""
    spec = importlib.util.find_spec("scipy.special")
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError("scipy.special not found")
    stand_in = types.ModuleType("scipy.special")
    stand_in.__path__ = list(spec.submodule_search_locations)
    sys.modules["scipy.special"] = stand_in
    try:
        return importlib.import_module("scipy.special._ufuncs").stdtrit
    finally:
        if sys.modules.get("scipy.special") is stand_in:
            del sys.modules["scipy.special"]


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
