"""The plain torch adapter: a Sampler / IterableDataset that asks the curriculum batch by batch, resumably."""

from __future__ import annotations

from typing import Any, cast

import pytest
from torch.utils.data import DataLoader

from rewardgym.curriculum import Curriculum
from rewardgym.curriculum.adapters.sampler import CurriculumDataset, CurriculumSampler
from rewardgym.curriculum.adapters.source import groups_by_id, groups_in_runs
from rewardgym.errors import DataError, UsageError
from tests.servers.test_startup_imports import loaded

ROWS: list[dict[str, Any]] = [{"question": f"q{i}", "answer": i % 2} for i in range(10)]
HEAVY = ["torch", "transformers", "trl", "verl", "ray", "rewardgym.curriculum.core"]


def _rows(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return batch


def test_importing_rewardgym_and_the_adapters_package_loads_no_trainer_library() -> None:
    code = (
        "import rewardgym, rewardgym.curriculum.adapters, rewardgym.curriculum.adapters.source\n"
        "import rewardgym.curriculum.adapters.client"
    )
    assert loaded(code, HEAVY) == dict.fromkeys(HEAVY, False)


def test_each_batch_is_asked_for_only_when_the_loader_reaches_it() -> None:
    cur = Curriculum(ROWS, group_size=2, seed=1)
    sampler = CurriculumSampler(cur, batch_size=3, num_batches=4, group_size=2)
    loader: DataLoader[dict[str, Any]] = DataLoader(
        cast(Any, ROWS), batch_size=3, sampler=sampler, collate_fn=_rows
    )
    assert len(loader) == 4
    for step, batch in enumerate(loader, start=1):
        assert cur.step == step  # no batch drawn ahead: the rewards below are in before the next pick
        tasks = [ROWS.index(row) for row in batch]
        assert tasks == sampler.served[-1] and len(set(tasks)) == 3
        cur.report_groups([(t, [float(ROWS[t]["answer"]), 1.0]) for t in tasks])
    assert cur.state().reports == 12


def test_repeats_lay_out_trl_style_and_a_small_dataset_fills_the_batch() -> None:
    cur = Curriculum(2, group_size=2, seed=0)
    sampler = CurriculumSampler(cur, batch_size=3, num_batches=1, repeat_each=2, repeat_batch=2)
    order = list(sampler)
    (tasks,) = sampler.served
    assert len(tasks) == 3 and set(tasks) == {0, 1}  # two tasks: the third slot is a second call's
    assert cur.step == 2
    assert order == [t for t in tasks for _ in range(2)] * 2
    assert len(sampler) == len(order) == 12


def test_a_resumed_loader_finishes_its_batch_and_draws_no_batch_it_would_drop() -> None:
    from torchdata.stateful_dataloader import StatefulDataLoader

    cur = Curriculum(ROWS, group_size=2, seed=2)

    def loader() -> tuple[CurriculumSampler, Any]:
        sampler = CurriculumSampler(cur, batch_size=2, num_batches=3, repeat_batch=2)
        return sampler, StatefulDataLoader(ROWS, batch_size=2, sampler=sampler, collate_fn=_rows)

    sampler, first = loader()
    it = iter(first)
    seen = [next(it), next(it), next(it)]  # batch 1 twice, then batch 2's first copy
    saved = first.state_dict()
    assert cur.step == 2
    again, second = loader()
    second.load_state_dict(saved)
    rest = list(second)
    assert rest[0] == seen[2]  # batch 2's second copy, from the saved state: no curriculum call
    assert len(rest) == 3 and cur.step == 3 and len(again.served) == 1  # only batch 3 was drawn
    assert [ROWS.index(r) for r in rest[1]] == [ROWS.index(r) for r in rest[2]] == again.served[0]
    assert again.served[0] != sampler.served[1]


def test_the_iterable_dataset_serves_the_rows_with_their_task_index() -> None:
    cur = Curriculum(ROWS, group_size=2, seed=0)
    data = CurriculumDataset(cur, batch_size=4, num_batches=2)
    batches = list(DataLoader(data, batch_size=4, collate_fn=_rows))
    assert len(batches) == 2 and cur.step == 2
    for batch in batches:
        for row in batch:
            assert row == {**ROWS[row["_ng_task_index"]], "_ng_task_index": row["_ng_task_index"]}


def test_worker_processes_and_bad_arguments_are_refused() -> None:
    cur = Curriculum(ROWS, seed=0)
    data = CurriculumDataset(cur, batch_size=2, num_batches=1)
    with pytest.raises(UsageError, match="num_workers=0"):
        list(DataLoader(data, batch_size=2, num_workers=1, collate_fn=_rows, multiprocessing_context="fork"))
    with pytest.raises(UsageError, match="batch_size must be a positive integer"):
        CurriculumSampler(cur, batch_size=0, num_batches=1)
    with pytest.raises(UsageError, match="not a sampler state"):
        CurriculumSampler(cur, batch_size=1, num_batches=1).load_state_dict({"yielded": 1})


def test_flat_rewards_become_groups_or_a_clear_error() -> None:
    assert groups_by_id([3, 5, 3, 5], [1, 0, 0, 0], ["a", "b", "a", "b"], "index") == [
        (3, [1.0, 0.0]),
        (5, [0.0, 0.0]),
    ]
    assert groups_in_runs([7, 7, 2, 2], [1, 0, 1, 1], 2, "_ng_task_index") == [
        (7, [1.0, 0.0]),
        (2, [1.0, 1.0]),
    ]
    with pytest.raises(DataError, match="mix task indices"):
        groups_in_runs([7, 2, 2, 2], [1, 0, 1, 1], 2, "_ng_task_index")
    with pytest.raises(DataError, match="do not make groups of 3"):
        groups_in_runs([7, 7, 2, 2], [1, 0, 1, 1], 3, "_ng_task_index")
    with pytest.raises(DataError, match="index must be an integer task index"):
        groups_by_id(["x"], [1.0], ["a"], "index")
