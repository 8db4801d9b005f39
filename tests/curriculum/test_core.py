"""The in-process curriculum: the API, refused input with the state unchanged, persistence and resume."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rewardgym.curriculum import Curriculum
from rewardgym.curriculum.errors import BadReward, DuplicateReport, StateFileError, UnknownTask
from rewardgym.curriculum.store import journal_path
from rewardgym.errors import UsageError

ROWS = [{"question": f"q{i}", "domain": "math" if i % 2 else "code"} for i in range(40)]


def fingerprint(cur: Curriculum) -> dict[str, Any]:
    """Everything a refused call must leave as it was."""
    return {
        **{name: array.copy() for name, array in cur.arrays.as_dict().items()},
        "step": cur.step,
        "seq": cur.seq,
        "reports": cur.reports,
    }


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(np.array_equal(a[k], b[k]) if isinstance(a[k], np.ndarray) else a[k] == b[k] for k in a)


@pytest.mark.parametrize("policy", ["uniform", "expected-signal"])
def test_next_batch_serves_distinct_rows_of_the_dataset_with_their_index(policy: str) -> None:
    cur = Curriculum(ROWS, policy=policy, group_size=4, seed=1)
    batch = cur.next_batch(16)
    indices = [row["_ng_task_index"] for row in batch]
    assert len(set(indices)) == 16
    assert all(row["question"] == f"q{row['_ng_task_index']}" for row in batch)
    assert "_ng_task_index" not in ROWS[indices[0]]  # a copy: the dataset's rows are not touched
    assert cur.next_batch(100).__len__() == 40  # at most every task once
    assert cur.step == 2


def test_uniform_serves_every_task_once_per_epoch() -> None:
    cur = Curriculum(ROWS, policy="uniform", seed=3)
    first = [r["_ng_task_index"] for _ in range(4) for r in cur.next_batch(10)]
    assert sorted(first) == list(range(40))


def test_report_counts_passes_and_says_whether_the_group_was_informative() -> None:
    cur = Curriculum(ROWS, policy="uniform", group_size=4)
    task = cur.next_batch(1)[0]["_ng_task_index"]
    assert cur.report(task, [1.0, 0.0, 1.0, 1.0]) is True
    state = cur.state([task])
    assert state.passes[0] == 3 and state.failures[0] == 1
    assert state.served[0] == 1 and state.reported[0] == 1 and state.informative_rate[0] == 1.0
    cur.next_indices(39)
    cur.next_indices(40)  # the next epoch: every task once more
    assert cur.report(task, [1.0, 1.0, 1.0, 1.0]) is False
    assert cur.state([task]).informative_rate[0] == 0.5
    assert cur.state().informative_share == 0.5


def test_counts_are_discounted_by_the_half_life_in_steps() -> None:
    cur = Curriculum(10, policy="uniform", half_life=2.0)
    task = int(cur.next_indices(1)[0])
    cur.report(task, [1.0, 1.0, 0.0, 0.0])
    for _ in range(4):
        cur.next_indices(1)
    state = cur.state([task])
    assert state.passes[0] == pytest.approx(2 * 0.25) and state.failures[0] == pytest.approx(0.5)


def test_the_posterior_follows_the_reports() -> None:
    cur = Curriculum(ROWS, policy="uniform", group_size=8, half_life=math.inf)
    tasks = cur.next_indices(3)
    cur.report(int(tasks[0]), [0.0] * 8)
    cur.report(int(tasks[1]), [1.0] * 8)
    cur.report(int(tasks[2]), [1.0, 0.0] * 4)
    state = cur.state(tasks)
    assert state.pass_mean[0] < 0.2 and state.pass_mean[1] > 0.8
    assert state.p_informative[2] > 0.9 and max(state.p_informative[0], state.p_informative[1]) < 0.5


@pytest.mark.parametrize(
    ("task", "rewards", "error", "words"),
    [
        (99, [1.0], UnknownTask, "unknown task index 99"),
        (-1, [1.0], UnknownTask, "unknown task index -1"),
        ("3", [1.0], UnknownTask, "unknown task index '3'"),
        (None, [1.0], DuplicateReport, "no served group waiting"),  # None → the served task, twice
        (None, [], BadReward, "non-empty list of numbers"),
        (None, [1.0, float("nan")], BadReward, "not a finite number"),
        (None, [1.0, float("inf")], BadReward, "not a finite number"),
        (None, [1.5], BadReward, "outside the declared range [0.0, 1.0]"),
        (None, [-0.1], BadReward, "outside the declared range"),
        (None, ["1"], BadReward, "list of numbers"),
        (None, 5, BadReward, "list of numbers"),
    ],
)
def test_bad_reports_are_refused_with_one_clear_error_and_nothing_changes(
    task: Any, rewards: Any, error: type[Exception], words: str, tmp_path: Path
) -> None:
    cur = Curriculum(ROWS, policy="uniform", state_path=tmp_path / "s.npz")
    served = int(cur.next_indices(1)[0])
    if isinstance(error, type) and error is DuplicateReport:
        cur.report(served, [1.0])
    before, journal = fingerprint(cur), journal_path(tmp_path / "s.npz").read_bytes()
    with pytest.raises(error) as caught:
        cur.report(served if task is None else task, rewards)
    assert words in str(caught.value) and "\n" not in str(caught.value)
    assert same(before, fingerprint(cur))
    assert journal_path(tmp_path / "s.npz").read_bytes() == journal  # nothing journaled either


def test_a_call_with_one_bad_group_applies_none_of_its_groups() -> None:
    cur = Curriculum(ROWS, policy="uniform")
    a, b = (int(t) for t in cur.next_indices(2))
    before = fingerprint(cur)
    with pytest.raises(DuplicateReport):
        cur.report_groups([(a, [1.0]), (b, [0.0]), (a, [1.0])])  # a was served once, reported twice
    assert same(before, fingerprint(cur))


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"policy": "nope"}, "unknown curriculum policy 'nope'"),
        ({"group_size": 0}, "group_size"),
        ({"half_life": 0}, "half_life"),
        ({"reward_range": (1.0, 0.0)}, "reward_range"),
        ({"policy": "expected-signal", "policy_options": {"explor": 1}}, "unknown option(s) ['explor']"),
        ({"policy": "expected-signal", "policy_options": {"window": (0.8, 0.2)}}, "window"),
        ({"policy": "expected-signal", "policy_options": {"quotas": {"math": 1}}}, "domain_key"),
    ],
)
def test_bad_settings_are_usage_errors(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(UsageError, match=None) as caught:
        Curriculum(ROWS, **kwargs)
    assert words in str(caught.value)


def test_next_batch_refuses_a_bad_size_without_taking_a_step() -> None:
    cur = Curriculum(ROWS, policy="uniform")
    for bad in (0, -3, 2.5, True):
        with pytest.raises(UsageError):
            cur.next_batch(bad)
    assert cur.step == 0 and cur.seq == 0


def test_a_restart_resumes_every_answered_call(tmp_path: Path) -> None:
    path = tmp_path / "state.npz"
    cur = Curriculum(ROWS, policy="uniform", state_path=path, save_every=5, seed=7)
    served: list[int] = []
    for _ in range(3):
        tasks = cur.next_indices(6)
        served.extend(int(t) for t in tasks)
        for task in tasks[:4]:
            cur.report(int(task), [1.0, 0.0, 0.0])
    before = fingerprint(cur)
    del cur  # a crash: no close(), the last reports are only in the journal
    again = Curriculum(ROWS, policy="uniform", state_path=path, seed=7)
    assert same(before, fingerprint(again))
    left = [t for t in served if again.arrays.pending[t] > 0]
    assert len(left) == 6  # the two unreported of each batch can still be reported, once
    again.report(left[0], [1.0])
    with pytest.raises(DuplicateReport):
        again.report(left[0], [1.0])
    nxt = [int(t) for t in again.next_indices(22)]
    assert sorted(served + nxt) == list(range(40))  # the epoch walk continued where it stopped


def test_a_torn_last_journal_line_was_never_answered_and_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "state.npz"
    cur = Curriculum(ROWS, policy="uniform", state_path=path)
    task = int(cur.next_indices(1)[0])
    before = fingerprint(cur)
    with journal_path(path).open("ab") as handle:
        handle.write(b'{"seq": 2, "op": "report", "task": %d, "rew' % task)
    del cur
    again = Curriculum(ROWS, policy="uniform", state_path=path)
    assert same(before, fingerprint(again))
    again.report(task, [1.0])  # and the journal goes on after the torn bytes were cut
    assert journal_path(path).read_bytes().count(b"\n") == 1


def test_a_torn_or_foreign_state_file_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "state.npz"
    cur = Curriculum(ROWS, policy="uniform", state_path=path)
    cur.report(int(cur.next_indices(1)[0]), [1.0])
    cur.close()
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(StateFileError, match="not a readable curriculum state file"):
        Curriculum(ROWS, policy="uniform", state_path=path)
    assert path.read_bytes() == whole[: len(whole) // 2]  # left for the user to look at
    path.write_bytes(whole)
    with pytest.raises(StateFileError, match="another dataset"):
        Curriculum(ROWS[:-1], policy="uniform", state_path=path)
    journal_path(path).write_bytes(b"not json\n")
    with pytest.raises(StateFileError, match=r"state\.npz\.journal:1: unreadable journal line"):
        Curriculum(ROWS, policy="uniform", state_path=path)
