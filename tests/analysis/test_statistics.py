"""The pure statistics layer against plain oracles: intervals, bands, settled, GRPO forecast, length."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from rewardgym.analysis import Settings, analyze_files
from rewardgym.analysis.grpo import Forecast, binary_tasks, value_frequencies
from rewardgym.analysis.length import length_analysis, segment_medians, within_task_ranks
from rewardgym.analysis.uncertainty import jeffreys, settled_in_band, task_passes
from rewardgym.profile.compute.report import band_counts
from rewardgym.stats.bands import band_of
from tests.analysis.helpers import rollout, write


def test_jeffreys_matches_beta_quantiles() -> None:
    for n in (1, 2, 4, 7, 64):
        for s in range(n + 1):
            low, high = jeffreys(np.array([n]), np.array([s]))
            dist = stats.beta(s + 0.5, n - s + 0.5)
            assert low[0] == (0.0 if s == 0 else pytest.approx(dist.ppf(0.025), abs=1e-12))
            assert high[0] == (1.0 if s == n else pytest.approx(dist.ppf(0.975), abs=1e-12))


def test_bands_agree_with_the_profile_summary() -> None:
    rates = np.array([0, 0.1, 0.2, 0.2000001, 0.4, 0.5, 0.6, 0.8, 0.81, 0.99, 1.0, 0.25])
    bands = band_of(rates)
    assert tuple(np.bincount(bands, minlength=7)) == band_counts(rates)
    assert bands.tolist() == [0, 1, 1, 2, 2, 3, 3, 4, 5, 5, 6, 2]


def _settled_oracle(n: int, s: int, eps: float) -> bool:
    low, high = (float(v[0]) for v in jeffreys(np.array([n]), np.array([s])))
    rate = s / n
    if rate == 0:
        return high <= eps
    if rate == 1:
        return low >= 1 - eps
    k = math.ceil(rate / 0.2 - 1e-12)  # (0.2(k-1), 0.2k]
    return low >= 0.2 * (k - 1) and high <= min(0.2 * k, 1.0)


def test_settled_matches_a_plain_oracle() -> None:
    cases = [(n, s) for n in (4, 16, 64, 200, 1000) for s in range(0, n + 1, max(1, n // 20))]
    n = np.array([c[0] for c in cases])
    s = np.array([c[1] for c in cases])
    low, high = jeffreys(n, s)
    settled = settled_in_band(band_of(s / n), low, high, 0.05)
    expected = [_settled_oracle(a, b, 0.05) for a, b in cases]
    assert settled.tolist() == expected
    assert any(expected) and not all(expected)


def test_task_passes_counts_threshold_and_masks() -> None:
    task = np.array([0, 0, 0, 1, 1])
    reward = np.array([1.0, 0.5, np.nan, 0.9, 1.0])
    counted = np.isfinite(reward)
    passes = task_passes(np.array([0, 1]), np.array([0, 3]), counted, counted & (reward >= 0.9))
    assert passes.n.tolist() == [2, 2] and passes.passes.tolist() == [1, 2]
    assert passes.rate.tolist() == [0.5, 1.0] and passes.band.tolist() == [3, 6]
    del task


def test_plugin_for_non_binary_tasks_matches_plain_sum() -> None:
    task_pos = np.array([0, 0, 0, 0, 1, 1, 1])
    reward = np.array([0.5, 0.5, 1.0, 0.0, 1.0, 0.0, 1.0])
    counted = np.ones(7, np.bool_)
    binary = binary_tasks(np.array([0, 4]), counted, reward)
    assert binary.tolist() == [False, True]
    owner, freq = value_frequencies(task_pos, counted, reward)
    forecast = Forecast(np.array([4, 3]), np.array([1, 2]), binary, owner, freq)
    p = forecast.all_equal(3)
    assert p[0] == pytest.approx(0.5**3 + 0.25**3 + 0.25**3)
    assert p[1] == pytest.approx(forecast.posterior.all_equal(3)[1])
    assert 0 < p[1] < 1
    assert forecast.informative_share(3) == pytest.approx(1 - p.mean())


def test_forecast_matches_simulation_with_known_p() -> None:
    rng = np.random.default_rng(7)
    tasks, n = 3000, 64
    p = rng.beta(0.7, 0.7, tasks)
    s = rng.binomial(n, p)
    forecast = Forecast(np.full(tasks, n), s, np.ones(tasks, np.bool_), np.zeros(0, np.int64), np.zeros(0))
    for g in (2, 8, 32):
        groups = rng.random((tasks, 200, g)) < p[:, None, None]
        observed = (groups.all(axis=2) | ~groups.any(axis=2)).mean()
        mc_error = 3 * math.sqrt(observed * (1 - observed) / (tasks * 200)) + 0.01
        assert 1 - _share(forecast, g) == pytest.approx(observed, abs=mc_error)


def test_split_half_forecast_predicts_the_other_half() -> None:
    rng = np.random.default_rng(11)
    tasks, half, g = 4000, 8, 4
    p = rng.beta(0.6, 0.6, tasks)
    draws = rng.random((tasks, 2 * half)) < p[:, None]
    first, second = draws[:, :half], draws[:, half:]
    forecast = Forecast(
        np.full(tasks, half), first.sum(1), np.ones(tasks, np.bool_), np.zeros(0, np.int64), np.zeros(0)
    )
    s2 = second.sum(1)
    # exact all-equal chance of a group of g drawn without replacement from the other half
    other = (
        np.array([math.comb(int(k), g) + math.comb(half - int(k), g) for k in s2]) / math.comb(half, g)
    ).mean()
    assert 1 - _share(forecast, g) == pytest.approx(other, abs=0.02)


def test_smallest_group_matches_linear_scan() -> None:
    n = np.array([4, 4, 4, 8])
    s = np.array([0, 1, 4, 3])
    forecast = Forecast(n, s, np.ones(4, np.bool_), np.zeros(0, np.int64), np.zeros(0))
    top = _share(forecast, 4096)  # tasks that may never or always pass cap the share below 1
    assert 0.3 < top < 1
    for target in (0.5 * top, 0.8 * top, 0.95 * top):
        scan = next(g for g in range(2, 5000) if _share(forecast, g) >= target)
        assert forecast.smallest_group(target) == scan
    keep = np.array([False, True, False, True])
    assert forecast.smallest_group(0.6, keep) is not None
    assert forecast.smallest_group(0.999999) is None


def test_segment_medians_and_within_task_ranks() -> None:
    values = np.array([3.0, 1.0, 2.0, 10.0, 10.0, 5.0])
    keys = np.array([0, 0, 0, 1, 1, 1])
    k, m = segment_medians(values, keys)
    assert k.tolist() == [0, 1] and m.tolist() == [2.0, 10.0]
    ranks = within_task_ranks(values, keys)
    expected = np.concatenate([stats.rankdata(values[:3]) - 2, stats.rankdata(values[3:]) - 2])
    assert ranks.tolist() == expected.tolist()


def test_length_analysis_against_plain_computation() -> None:
    rng = np.random.default_rng(3)
    tasks, reps = 300, 6
    task_pos = np.repeat(np.arange(tasks), reps)
    tokens = rng.integers(10, 500, tasks * reps).astype(float)
    passed = rng.random(tasks * reps) < 0.6 - tokens / 2000
    reward = passed.astype(float)
    cut = tokens >= 480
    result = length_analysis(task_pos, np.ones(tasks * reps, np.bool_), reward, passed, tokens, cut)
    assert result["truncation"]["cut_off"] == int(cut.sum())
    assert result["truncation"]["pass_rate_cut_off"] == pytest.approx(passed[cut].mean())
    assert result["tokens_per_solve"] == pytest.approx(tokens.sum() / passed.sum())
    diffs = []
    within_x, within_y = [], []
    for t in range(tasks):
        sl = slice(t * reps, (t + 1) * reps)
        ok, tok = passed[sl], tokens[sl]
        if ok.any() and (~ok).any():
            diffs.append(np.median(tok[ok]) - np.median(tok[~ok]))
            within_x.extend(stats.rankdata(tok) - stats.rankdata(tok).mean())
            within_y.extend(stats.rankdata(reward[sl]) - stats.rankdata(reward[sl]).mean())
    assert result["within_task"]["tasks"] == len(diffs)
    assert result["within_task"]["median_difference"] == pytest.approx(float(np.median(diffs)))
    nonzero = [d for d in diffs if d != 0]
    assert result["within_task"]["wilcoxon_p"] == pytest.approx(stats.wilcoxon(nonzero).pvalue)
    assert result["within_task"]["median_difference"] < 0  # failures run longer in this simulation
    x, y = np.array(within_x), np.array(within_y)
    assert result["spearman"]["within_task"] == pytest.approx(
        float((x * y).sum() / np.sqrt((x * x).sum() * (y * y).sum()))
    )
    assert result["spearman"]["pooled"] == pytest.approx(stats.spearmanr(tokens, reward).statistic)
    deciles = result["deciles"]
    assert sum(d["rollouts"] for d in deciles) == tasks * reps and len(deciles) == 10


def test_split_half_on_rollout_files(tmp_path: Path) -> None:
    """The forecast read from a rollouts file of repeats 0–7 predicts groups drawn from repeats 8–15."""
    rng = np.random.default_rng(5)
    tasks, half, g = 1500, 8, 4
    p = rng.beta(0.5, 0.5, tasks)
    passed = rng.random((tasks, 2 * half)) < p[:, None]
    rows = [rollout(t, r, reward=float(passed[t, r])) for t in range(tasks) for r in range(2 * half)]
    first = write(tmp_path / "first.jsonl", [row for row in rows if row["_ng_rollout_index"] < half])
    settings = Settings(group_sizes=(g,), default_group=g)
    forecast = analyze_files(None, first, settings, report=False).analysis.document["grpo"]["groups"][0][
        "all"
    ]
    s2 = passed[:, half:].sum(1)
    other = np.mean([(math.comb(int(k), g) + math.comb(half - int(k), g)) / math.comb(half, g) for k in s2])
    assert forecast == pytest.approx(1 - other, abs=0.03)


def _share(forecast: Forecast, group: int) -> float:
    share = forecast.informative_share(group)
    assert share is not None
    return share


@pytest.mark.parametrize("seed", range(4))
def test_numpy_ranks_and_spearman_equal_scipy_exactly(seed: int) -> None:
    """The analysis ranks with numpy (scipy's rankdata hashes every value first: slow at 10^6); the
    numbers must be scipy's to the last bit, ties and all."""
    from rewardgym.analysis.length import average_ranks, pooled_spearman

    rng = np.random.default_rng(seed)
    n = 5000
    tokens = rng.integers(0, 60 if seed % 2 else 6000, n).astype(np.float64)  # many ties / few ties
    reward = rng.choice([0.0, 0.5, 1.0], n) if seed < 2 else rng.random(n).round(2)
    task_pos = np.sort(rng.integers(0, 700, n))
    for values in (tokens, reward):
        assert np.array_equal(average_ranks(values), stats.rankdata(values, method="average"))
    expected = stats.spearmanr(tokens, reward)
    assert pooled_spearman(tokens, reward) == (float(expected.statistic), float(expected.pvalue))
    # the previous formulation: rank globally, then rank (task, global rank) as one number
    combined = task_pos.astype(np.float64) * (n + 1) + stats.rankdata(tokens, method="average")
    ranks = stats.rankdata(combined, method="average")
    counts = np.bincount(task_pos)
    centred = ranks - (np.bincount(task_pos, weights=ranks) / np.maximum(counts, 1))[task_pos]
    assert np.array_equal(within_task_ranks(tokens, task_pos), centred)


def test_group_value_and_key_orders_sort_like_lexsort() -> None:
    from rewardgym.analysis.columns import group_value_order, key_order

    rng = np.random.default_rng(11)
    groups = rng.integers(0, 50, 3000)
    for values in (rng.integers(0, 900, 3000).astype(float), rng.random(3000), np.full(3000, 2.0)):
        order = group_value_order(groups, values)
        expected = np.lexsort((values, groups))
        assert np.array_equal(groups[order], groups[expected]) and np.array_equal(
            values[order], values[expected]
        )
    task, rollout = rng.permutation(np.repeat(np.arange(700), 4)), np.tile(np.arange(4), 700)
    line = np.arange(task.shape[0]) + 1
    assert np.array_equal(key_order(task, rollout, line), np.lexsort((line, rollout, task)))
    task[5], rollout[5] = task[9], rollout[9]  # a duplicated key: the lines decide, as lexsort does
    assert np.array_equal(key_order(task, rollout, line), np.lexsort((line, rollout, task)))
    negative = task - 3  # negative indices: lexsort itself
    assert np.array_equal(key_order(negative, rollout, line), np.lexsort((line, rollout, negative)))
