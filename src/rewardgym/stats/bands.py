"""The seven pass-rate bands every report uses: 0 %, (0–20 %], (20–40 %], (40–60 %], (60–80 %], (80–100 %),
100 % (the labels are :data:`rewardgym.profile.BAND_LABELS`)."""

from __future__ import annotations

import numpy as np

from rewardgym.stats.arrays import FloatArray, IntArray

EDGES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
"""Edges of the inner bands (0–20 %] … (80–100 %)."""


def band_of(rate: FloatArray) -> IntArray:
    """Band index per rate (-1 for NaN)."""
    inner = np.searchsorted(np.array(EDGES[1:-1]), rate, side="left") + 1
    band = np.where(rate == 0, 0, np.where(rate == 1, 6, inner))
    return np.where(np.isnan(rate), -1, band).astype(np.int64)
