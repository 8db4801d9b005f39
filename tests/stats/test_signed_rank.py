"""Our Wilcoxon signed-rank p-value against ``scipy.stats.wilcoxon`` (the oracle) in each of its regimes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from rewardgym.stats.signed_rank import wilcoxon_p


@pytest.mark.parametrize("n", [1, 2, 3, 5, 13, 14, 30, 50, 51, 80, 400])
@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("shift", [0.0, 0.4, 2.0])
def test_matches_scipy(n: int, tied: bool, shift: float) -> None:
    rng = np.random.default_rng(n * 7 + int(tied) + int(shift * 10))
    d = rng.normal(shift, 1.0, n)
    if tied:
        d = np.round(d * 2) / 2  # few distinct magnitudes: ties
    d = d[d != 0]
    if d.shape[0] == 0:
        assert math.isnan(wilcoxon_p(d))
        return
    expected = float(stats.wilcoxon(d).pvalue)
    assert wilcoxon_p(d) == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_all_one_sign_is_small_and_symmetric() -> None:
    d = np.arange(1.0, 21.0)
    assert wilcoxon_p(d) == pytest.approx(2 / 2**20, rel=1e-12)
    assert wilcoxon_p(-d) == wilcoxon_p(d)
