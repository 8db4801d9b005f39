"""The statistics kernels: the same digits as the numpy/pandas/scipy reductions NeMo Gym relies on."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from rewardgym.profile.compute.kernels import describe_segments, linear_quantile, series_stats
from rewardgym.profile.compute.report import band_counts
from rewardgym.stats.tinterval import t_interval


def _segment_reference(values: np.ndarray) -> tuple[int, float, float, float, float, float]:
    """pandas' reductions of one group column (absent values as NaN), written out with numpy."""
    present = ~np.isnan(values)
    n = int(present.sum())
    if n == 0:
        return 0, math.nan, math.nan, math.nan, math.nan, math.nan
    filled = np.where(present, values, 0.0)
    mean = float(np.sum(filled)) / n
    squares = (mean - filled) ** 2
    squares[~present] = 0.0
    std = math.sqrt(float(np.sum(squares)) / (n - 1)) if n > 1 else math.nan
    x = values[present]
    return n, mean, float(x.max()), float(x.min()), float(np.median(x)), std


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_describe_segments_matches_per_segment_numpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    lengths = rng.choice([1, 2, 3, 4, 7, 8, 9, 16, 33, 129, 300], size=rng.integers(1, 12))
    rows = int(lengths.sum())
    values = rng.normal(size=(3, rows)) * rng.choice([1.0, 1e-3, 1e9], size=(3, rows))
    values[rng.random((3, rows)) < 0.2] = np.nan
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    stats = describe_segments(values, starts, lengths.astype(np.int64))
    for g, (start, length) in enumerate(zip(starts, lengths, strict=True)):
        for f in range(3):
            n, mean, largest, smallest, median, std = _segment_reference(values[f, start : start + length])
            assert stats.count[g, f] == n
            got = (stats.mean[g, f], stats.max[g, f], stats.min[g, f], stats.median[g, f], stats.std[g, f])
            for a, b in zip(got, (mean, largest, smallest, median, std), strict=True):
                assert (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize(("length", "threads"), [(2, 1), (4, 1), (5, 1), (4, 2), (4, 3)])
def test_describe_segments_of_equal_back_to_back_segments(length: int, threads: int) -> None:
    """Every task with the same number of rollouts (the usual case, read as a view), the fields shared
    among threads or not: same digits."""
    rng = np.random.default_rng(length)
    lengths = np.full(40, length, dtype=np.int64)
    values = rng.normal(size=(2, 40 * length))
    values[0, rng.random(40 * length) < 0.2] = np.nan
    starts = np.arange(0, 40 * length, length, dtype=np.int64)
    stats = describe_segments(values, starts, lengths, threads)
    for g, start in enumerate(starts.tolist()):
        for f in range(2):
            n, mean, largest, smallest, median, std = _segment_reference(values[f, start : start + length])
            got = (stats.mean[g, f], stats.max[g, f], stats.min[g, f], stats.median[g, f], stats.std[g, f])
            assert stats.count[g, f] == n
            for a, b in zip(got, (mean, largest, smallest, median, std), strict=True):
                assert (math.isnan(a) and math.isnan(b)) or a == b


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(-1e12, 1e12, allow_nan=False), min_size=1, max_size=60), st.sampled_from([0.25, 0.75])
)
def test_linear_quantile_matches_numpy(values: list[float], q: float) -> None:
    ordered = np.sort(np.array(values))
    assert linear_quantile(ordered, q) == float(np.percentile(ordered, q * 100))


def test_series_stats() -> None:
    s = series_stats(np.array([1.0, 1.0, 0.0]))
    assert (s.n, s.mean, s.median, s.min, s.max) == (3, 2 / 3, 1.0, 0.0, 1.0)
    assert s.std == pytest.approx(math.sqrt(1 / 3)) and s.sem == s.std / 3**0.5
    assert (s.p25, s.p75) == (0.5, 1.0)
    one = series_stats(np.array([4.5]))
    assert (one.std, one.sem, one.p25, one.p75) == (0.0, 0.0, 4.5, 4.5)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 400), st.booleans())
def test_series_stats_match_numpy_for_short_and_long_series(seed: int, n: int, ties: bool) -> None:
    """Long series take their order statistics from a partition, short ones from a sort: same digits."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, size=n).astype(np.float64) if ties else rng.normal(size=n) * 1e3
    s = series_stats(x)
    assert (s.min, s.max) == (float(x.min()), float(x.max()))
    assert s.median == float(np.median(x))
    assert (s.p25, s.p75) == (float(np.percentile(x, 25)), float(np.percentile(x, 75)))


@pytest.mark.parametrize(("n", "t"), [(2, 12.7062), (3, 4.3027), (500, 1.9647)])
def test_t_interval_quantiles(n: int, t: float) -> None:
    low, high = t_interval(10.0, 1.0, n)  # type: ignore[misc]
    assert high - 10.0 == pytest.approx(t, abs=1e-4)
    assert 10.0 - low == pytest.approx(t, abs=1e-4)


@settings(max_examples=50, deadline=None)
@given(st.floats(-1e6, 1e6), st.floats(1e-6, 1e3), st.integers(2, 10_000))
def test_t_interval_is_scipys_to_the_last_digit(mean: float, sem: float, n: int) -> None:
    expected = scipy_stats.t.interval(0.95, df=n - 1, loc=mean, scale=sem)
    assert t_interval(mean, sem, n) == (float(expected[0]), float(expected[1]))


def test_stdtrit_is_loaded_without_the_rest_of_scipy_special() -> None:
    """The quantile function is scipy's own, loaded cheaply; ``import scipy.special`` still works after
    it, and gives that very function."""
    import subprocess
    import sys

    code = (
        "import sys; from rewardgym.stats.tinterval import t_quantile; q = t_quantile(3, 0.975); "
        "lean = 'scipy.special' not in sys.modules and 'numpy.f2py' not in sys.modules; "
        "import scipy.special, scipy.stats; "
        ""
        "print(lean, q == float(scipy.stats.t.ppf(0.975, 3)), "
        "scipy.special.stdtrit is sys.modules['scipy.special._ufuncs'].stdtrit)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True"]


def test_t_interval_edge_cases() -> None:
    assert t_interval(0.3, 0.1, 1) is None
    assert t_interval(0.3, 0.0, 0) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # identical values are normal: no warning (NeMo Gym prints one)
        assert t_interval(0.3, 0.0, 4) == (0.3, 0.3)
        low, high = t_interval(0.3, 0.01, 4)  # type: ignore[misc]
        assert low < 0.3 < high


def test_pass_rate_bands() -> None:
    rates = np.array([0.0, 0.0, 0.1, 0.2, 0.2000001, 0.4, 0.5, 0.8, 0.81, 0.999, 1.0])
    assert band_counts(rates) == (2, 2, 2, 1, 1, 2, 1)
