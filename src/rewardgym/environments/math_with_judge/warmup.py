"""Imported once by the fork helper (see :mod:`.library`): grades one trivial answer so that math-verify's
lazy state (LaTeX parser, SymPy caches) exists before any job's child is forked; each child starts warm.

Importing this module has that one side effect and nothing else; never import it from ordinary code.
"""

from __future__ import annotations

from rewardgym.environments.math_with_judge.library import math_verify_check

WARMUP_RESULT = math_verify_check("\\frac{1}{2}", "x = \\boxed{0.5}")
"""The warm-up's own result (``(1.0, ...)`` when math-verify works in this process)."""

if WARMUP_RESULT[0] != 1.0:
    raise ImportError(f"math-verify does not work in this environment (warm-up gave {WARMUP_RESULT})")
