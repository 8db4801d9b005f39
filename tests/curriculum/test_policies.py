"""What each policy serves, on pools with known pass rates: the baselines behave as their papers say, and
expected-signal serves by P(informative group) with its options (window, quotas, scale path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rewardgym.curriculum import Curriculum
from rewardgym.curriculum.catalog import policy_class
from rewardgym.curriculum.policy import POLICIES
from rewardgym.errors import UsageError

G = 8
REWARDS = [[1.0] * k + [0.0] * (G - k) for k in range(G + 1)]


def pool(size: int, seed: int = 0) -> np.ndarray:
    """A third never solved, a third always solved, a third at p = 0.5."""
    return np.random.default_rng(seed).permutation(np.resize([0.0, 1.0, 0.5], size))


def drive(
    cur: Curriculum, p: np.ndarray, steps: int, n: int, seed: int = 1
) -> tuple[float, list[np.ndarray]]:
    """Serve and report ``steps`` batches; the informative share and what was served."""
    rng = np.random.default_rng(seed)
    served, informative, groups = [], 0, 0
    for _ in range(steps):
        tasks = cur.next_indices(n)
        served.append(tasks)
        for task, k in zip(tasks.tolist(), rng.binomial(G, p[tasks]).tolist(), strict=True):
            informative += cur.report(task, REWARDS[k])
            groups += 1
    return informative / groups, served


def test_every_built_in_policy_is_registered() -> None:
    policy_class("uniform")
    assert set(POLICIES) == {"uniform", "dynamic-sampling", "greso", "thompson", "expected-signal"}


def test_expected_signal_learns_to_serve_the_informative_third() -> None:
    p = pool(900)
    share, served = drive(Curriculum(900, policy="expected-signal", group_size=G), p, 40, 30)
    late = np.concatenate(served[-10:])
    assert np.mean(p[late] == 0.5) > 0.9  # uniform would be a third
    assert share > 0.6


def test_uniform_serves_a_third_informative() -> None:
    share, _ = drive(Curriculum(900, policy="uniform", group_size=G), pool(900), 40, 30)
    assert 0.25 < share < 0.42


def test_greso_skips_tasks_whose_last_groups_were_all_equal() -> None:
    p = pool(300)
    cur = Curriculum(300, policy="greso", group_size=G)
    drive(cur, p, 10, 30)  # one epoch: every task seen once
    _, second = drive(cur, p, 10, 30, seed=2)
    later = np.concatenate(second)
    assert np.mean(p[later] == 0.5) > 0.45  # zero-variance tasks skipped with probability 1 − p_e
    assert cur.policy.state()["p_hard"] < 0.5 or cur.policy.state()["p_easy"] < 0.5  # adapted down


def test_dynamic_sampling_oversamples_by_the_observed_informative_rate() -> None:
    p = pool(600)
    cur = Curriculum(600, policy="dynamic-sampling", group_size=G)
    first = cur.next_indices(30)
    assert first.shape[0] == 30  # nothing reported yet: no over-sampling
    rng = np.random.default_rng(0)
    for task, k in zip(first.tolist(), rng.binomial(G, p[first]).tolist(), strict=True):
        cur.report(task, REWARDS[k])
    rate = cur.informative_total / cur.reports
    assert cur.next_indices(30).shape[0] == int(np.ceil(30 * min(3.0, 1 / max(rate, 1 / 3))))
    fixed = Curriculum(600, policy="dynamic-sampling", policy_options={"oversample": 2.0})
    assert fixed.next_indices(30).shape[0] == 60


def test_thompson_serves_tasks_whose_sampled_rate_is_near_the_target() -> None:
    p = pool(900)
    share, served = drive(Curriculum(900, policy="thompson", group_size=G), p, 40, 30)
    assert np.mean(p[np.concatenate(served[-10:])] == 0.5) > 0.6 and share > 0.5


def test_a_difficulty_window_keeps_the_batch_inside_it() -> None:
    p = np.random.default_rng(3).permutation(np.resize([0.1, 0.5, 0.9], 900))
    cur = Curriculum(900, policy="expected-signal", policy_options={"window": [0.3, 0.7]})
    _, served = drive(cur, p, 40, 30)
    assert np.mean(p[np.concatenate(served[-10:])] == 0.5) > 0.8


def test_quotas_reserve_each_domains_share() -> None:
    rows = [{"domain": "math" if i < 100 else "code"} for i in range(1000)]
    cur = Curriculum(rows, domain_key="domain", policy_options={"quotas": {"math": 0.5}})
    tasks = cur.next_indices(40)
    assert np.sum(tasks < 100) >= 20
    with pytest.raises(UsageError, match="unknown domains"):
        Curriculum(rows, domain_key="domain", policy_options={"quotas": {"bio": 0.5}})


def test_at_scale_the_recently_informative_stay_candidates() -> None:
    """With more tasks than ``scan``, a batch is a tournament: the informative tasks found stay in it."""
    size = 20_000
    p = np.zeros(size)
    good = np.random.default_rng(4).choice(size, 200, replace=False)
    p[good] = 0.5
    cur = Curriculum(size, policy="expected-signal", policy_options={"scan": 512, "hot": 512})
    _, served = drive(cur, p, 60, 50)
    assert np.mean(np.isin(np.concatenate(served[-10:]), good)) > 0.5  # a random draw: 1 %


def test_a_cold_start_from_a_run_or_a_profile_puts_its_counts_in(tmp_path: Path) -> None:
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text(
        "".join(f'{{"_ng_task_index": {t}, "_ng_rollout_index": {r}, "reward": {float(t == 1 or r % 2)}}}\n'
                for t in range(3) for r in range(4))
    )  # fmt: skip
    cur = Curriculum.from_run(3, rollouts, policy="uniform", half_life=float("inf"))
    state = cur.state()
    assert state.passes.tolist() == [2, 4, 2] and state.failures.tolist() == [2, 0, 2]
    profile = tmp_path / "p_reward_profiling.jsonl"
    profile.write_text('{"_ng_task_index": 1, "rollout_infos": [{"reward": 1}, {"reward": 0.0}]}\n')
    assert Curriculum.from_profile(3, profile, policy="uniform").state().passes.tolist() == [0, 1, 0]
    profile.write_text('{"_ng_task_index": 7, "rollout_infos": []}\n')
    with pytest.raises(Exception, match=r"p_reward_profiling\.jsonl:1: task 7 is not a row"):
        Curriculum.from_profile(3, profile)
