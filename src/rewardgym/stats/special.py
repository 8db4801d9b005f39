"""scipy's special functions without the cost of ``import scipy.special``.

Contract of :func:`ufuncs`: the module ``scipy.special._ufuncs`` (``stdtrit``, ``stdtr``, ``ndtr``,
``betaincinv``, ``betaln``, …: the very objects ``scipy.special`` exports), loaded once. When
``scipy.special`` is already imported it is taken from there; otherwise the compiled module is imported
under a bare stand-in for its package, removed again at once — so a later ``import scipy.special`` runs as
usual and finds this very module. Why: ``scipy/special/__init__.py`` loads scipy's array-API layer and
through it numpy.f2py, numpy.testing and more (≈ 0.2–0.4 s of CPU); the compiled module alone is a few
hundredths of a second. A scipy whose compiled module cannot load alone falls back to the package.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from functools import cache


@cache
def ufuncs() -> types.ModuleType:
    """``scipy.special._ufuncs`` (see module doc)."""
    if "scipy.special" in sys.modules:
        return importlib.import_module("scipy.special._ufuncs")
    try:
        return _alone()
    except Exception:  # pragma: no cover - a scipy whose compiled module needs its package first
        return importlib.import_module("scipy.special._ufuncs")


def _alone() -> types.ModuleType:
    spec = importlib.util.find_spec("scipy.special")
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError("scipy.special not found")
    stand_in = types.ModuleType("scipy.special")
    stand_in.__path__ = list(spec.submodule_search_locations)
    sys.modules["scipy.special"] = stand_in
    try:
        return importlib.import_module("scipy.special._ufuncs")
    finally:
        if sys.modules.get("scipy.special") is stand_in:
            del sys.modules["scipy.special"]
