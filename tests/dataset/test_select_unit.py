"""The selection itself (pure): filters and their drop reasons, quotas, stratified shares, orders, the
curriculum and the Gaussian schedule's statistical behaviour, seeds; and the training row (seed removal,
content identity)."""

from __future__ import annotations

import itertools

import numpy as np
import orjson
import pytest

from rewardgym.dataset.options import SelectOptions
from rewardgym.dataset.select import REASONS, Stats, select_indices, stage_means
from rewardgym.dataset.sources import content_key, training_row
from rewardgym.stats.bands import band_of


def _stats(rate: list[float] | np.ndarray, **extra: object) -> Stats:
    r = np.asarray(rate, np.float64)
    n = r.shape[0]
    base: dict[str, object] = {
        "rate": r,
        "band": band_of(r),
        "settled": np.zeros(n, np.bool_),
        "flagged": np.zeros(n, np.bool_),
    }
    base.update(extra)
    return Stats(**base)  # type: ignore[arg-type]


def _reasons(dropped: np.ndarray) -> list[str | None]:
    return [None if d < 0 else REASONS[d] for d in dropped.tolist()]


def test_filters_record_the_first_reason() -> None:
    stats = _stats(
        [np.nan, 0.0, 0.1, 0.5, 0.5, 0.9, 1.0],
        settled=np.array([False, True, False, True, False, True, True]),
        flagged=np.array([False, False, False, False, False, True, False]),
    )
    options = SelectOptions(
        min_pass_rate=0.05, bands=("40-60", "80-100", "100"), settled_only=True, drop_flagged=True
    )
    selection = select_indices(stats, options)
    assert _reasons(selection.dropped) == [
        "unmeasured", "pass_rate", "band", None, "unsettled", "flagged", None,
    ]  # fmt: skip
    assert selection.order.tolist() == [3, 6]


def test_stratified_shares_follow_the_largest_remainder() -> None:
    groups = np.array([0] * 50 + [1] * 30 + [2] * 20, np.int64)
    stats = _stats(np.linspace(0, 1, 100), strata=groups)
    selection = select_indices(stats, SelectOptions(stratify="d", limit=11, seed=1))
    kept = groups[selection.order]
    # exact shares 5.5, 3.3, 2.2 -> floors 5, 3, 2 and the one left over goes to the largest remainder
    assert np.bincount(kept).tolist() == [6, 3, 2]
    assert _reasons(selection.dropped).count("stratify") == 89


def test_quota_keeps_the_preferred_tasks_of_each_group() -> None:
    groups = np.array([0, 0, 0, 1, 1, 1], np.int64)
    stats = _stats([0.9, 0.1, 0.5, 0.2, 0.8, 0.4], by=groups)
    easiest = select_indices(stats, SelectOptions(by="d", quota=1, order="easiest-first"))
    assert easiest.order.tolist() == [0, 4]  # by pass rate, easiest first: 0.9 (task 0) before 0.8 (task 4)
    hardest = select_indices(stats, SelectOptions(by="d", quota=2, order="hardest-first"))
    assert hardest.order.tolist() == [1, 3, 5, 2]


def test_limit_with_difficulty_orders_and_random() -> None:
    rate = np.array([0.3, 0.7, 0.1, 0.9, 0.5])
    assert select_indices(_stats(rate), SelectOptions(limit=2, order="hardest-first")).order.tolist() == [
        2,
        0,
    ]
    assert select_indices(_stats(rate), SelectOptions(limit=2, order="easiest-first")).order.tolist() == [
        3,
        1,
    ]
    picks = {
        tuple(select_indices(_stats(rate), SelectOptions(limit=2, seed=s)).order.tolist()) for s in range(20)
    }
    assert len(picks) > 3  # seeded random choices differ by seed…
    assert all(list(p) == sorted(p) for p in picks)  # …and stay in input order ("original")


def test_same_seed_same_selection_other_seed_other_order() -> None:
    rate = np.random.default_rng(0).random(500)
    options = SelectOptions(schedule="gaussian", stages=5, seed=11)
    a = select_indices(_stats(rate), options)
    b = select_indices(_stats(rate), options)
    assert a.order.tolist() == b.order.tolist()
    c = select_indices(_stats(rate), SelectOptions(schedule="gaussian", stages=5, seed=12))
    assert a.order.tolist() != c.order.tolist()
    assert sorted(a.order.tolist()) == list(range(500))  # without --replace: every task once


def test_gaussian_schedule_moves_from_easy_to_hard() -> None:
    """Pass rates spread uniformly: each stage's mean pass rate falls, stage by stage, and stays near
    its target μ_k (the pool shrinks without replacement, so later stages drift towards what is left)."""
    rate = np.random.default_rng(5).random(4000)
    options = SelectOptions(schedule="gaussian", stages=5, stage_size=400, sigma=0.1, seed=3)
    selection = select_indices(_stats(rate), options)
    assert selection.stage is not None
    means = [float(rate[selection.order[selection.stage == k]].mean()) for k in range(5)]
    assert all(earlier > later + 0.1 for earlier, later in itertools.pairwise(means))
    assert stage_means(options) == pytest.approx((0.9, 0.7, 0.5, 0.3, 0.1))
    for mean, target in zip(means, stage_means(options), strict=True):
        assert abs(mean - target) < 0.05, (means, target)
    assert _reasons(selection.dropped).count("schedule") == 4000 - 2000


def test_gaussian_with_replacement_draws_across_stages() -> None:
    rate = np.full(10, 0.5)
    selection = select_indices(
        _stats(rate), SelectOptions(schedule="gaussian", stages=3, stage_size=10, replace=True)
    )
    assert selection.order.shape[0] == 30
    assert all(sorted(selection.order[selection.stage == k].tolist()) == list(range(10)) for k in range(3))


def test_curriculum_stages_are_ordered_by_difficulty() -> None:
    rate = np.random.default_rng(2).random(103)
    selection = select_indices(_stats(rate), SelectOptions(schedule="curriculum", stages=4, seed=4))
    assert selection.stage is not None
    assert np.bincount(selection.stage).tolist() == [26, 26, 26, 25]
    stages = [rate[selection.order[selection.stage == k]] for k in range(4)]
    assert all(a.min() >= b.max() for a, b in itertools.pairwise(stages))
    assert not np.all(np.diff(stages[0]) <= 0)  # shuffled inside a stage, not sorted


def test_training_row_drops_ng_keys_and_the_collector_seed_only() -> None:
    sample = {
        "responses_create_params": {"input": "q", "metadata": {"extra_body": '{"seed":0}'}, "top_p": 1},
        "_ng_environment_server": "x",
        "domain": "d",
    }
    assert training_row(sample, 0) == {"responses_create_params": {"input": "q", "top_p": 1}, "domain": "d"}
    own = {"responses_create_params": {"input": "q", "metadata": {"extra_body": '{"seed":42,"k":1}', "m": 1}}}
    assert training_row(own, 0) == own  # a seed the user set (not the lowest rollout index) stays
    assert training_row(own, 42)["responses_create_params"]["metadata"] == {"m": 1, "extra_body": '{"k":1}'}
    broken = {"responses_create_params": {"input": "q", "metadata": {"extra_body": "not json"}}}
    assert training_row(broken, 0) == broken


def test_content_key_ignores_key_order_only() -> None:
    a = {"x": 1, "y": {"b": 2, "a": 1}}
    b = orjson.loads(b'{"y": {"a": 1, "b": 2}, "x": 1}')
    assert content_key(a) == content_key(b)
    assert content_key(a) != content_key({**a, "x": 2})
