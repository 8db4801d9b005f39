"""The veRL sampler against veRL itself: its data config, dataset, loader, ``DataProto`` and class loader.

veRL ≤ 0.7.1 builds a curriculum sampler as ``load_extern_object(data.sampler.class_path,
data.sampler.class_name)(data_source=dataset, data_config=config.data)`` and calls ``update(batch=batch)``
after each step; the steps below do the same with the veRL we pin (0.9.1: the loader, ``RLHFDataset``,
``collate_fn``, ``StatefulDataLoader`` and ``DataProto`` are its own), no GPU.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import torch
from omegaconf import OmegaConf

from rewardgym.curriculum import Curriculum
from rewardgym.errors import DataError, UsageError
from tests.curriculum import tiny_lm

TASKS = 12
SOLVABLE = set(range(6))
BATCH = 4
GROUP = 4
CLASS = [
    "sampler.class_path=pkg://rewardgym.curriculum.adapters.verl",
    "sampler.class_name=VerlCurriculumSampler",
]


def _parquet(path: Path) -> Path:
    rows = [
        {
            "data_source": "toy",
            "prompt": [{"role": "user", "content": f"q{i}?"}],
            "reward_model": {"style": "rule", "ground_truth": str(i)},
            "extra_info": {"index": i, "split": "train"},
        }
        for i in range(TASKS)
    ]
    pl.DataFrame(rows).write_parquet(path)
    return path


def _data_config(tmp_path: Path, *extra: str) -> Any:
    import verl

    defaults = OmegaConf.load(Path(verl.__file__).parent / "trainer/config/data/legacy_data.yaml")
    dotlist = [
        f"train_files={_parquet(tmp_path / 'train.parquet')}",
        f"train_batch_size={BATCH}",
        "max_prompt_length=16",
        "dataloader_num_workers=0",
        f"cache_dir={tmp_path / 'cache'}",
        *CLASS,
        f"sampler.group_size={GROUP}",
        *extra,
    ]
    return OmegaConf.merge(defaults, OmegaConf.from_dotlist(dotlist))


def _sampler_and_loader(data_config: Any) -> tuple[Any, Any]:
    from torchdata.stateful_dataloader import StatefulDataLoader
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
    from verl.utils.import_utils import load_extern_object

    dataset = RLHFDataset(data_config.train_files, tiny_lm.tokenizer(), data_config)
    cls: Any = load_extern_object(data_config.sampler.class_path, data_config.sampler.class_name)
    sampler = cls(data_source=dataset, data_config=data_config)
    loader = StatefulDataLoader(
        dataset=dataset,
        batch_size=data_config.train_batch_size,
        num_workers=data_config.dataloader_num_workers,
        drop_last=True,
        collate_fn=collate_fn,
        sampler=sampler,
    )
    return sampler, loader


def scored(batch_dict: dict[str, Any], index_key: str = "index") -> Any:
    """What veRL's fit loop makes of a loader batch before ``update``: uid, ``rollout.n`` copies, scores."""
    from verl import DataProto

    batch = DataProto.from_single_dict(batch_dict)
    batch.non_tensor_batch["uid"] = np.array([str(uuid.uuid4()) for _ in range(len(batch))], dtype=object)
    batch = batch.repeat(repeat_times=GROUP, interleave=True)
    scores = torch.zeros(len(batch), 5)
    for row, index in enumerate(batch.non_tensor_batch[index_key]):
        scores[row, -1] = float(int(index) in SOLVABLE and row % 2 == 0)  # half of a solvable group passes
    batch.batch["token_level_scores"] = scores
    return batch


def test_verl_builds_the_sampler_from_its_config_and_the_rewards_steer_what_it_serves(tmp_path: Path) -> None:
    sampler, loader = _sampler_and_loader(_data_config(tmp_path, "sampler.seed=3"))
    assert len(loader) == TASKS // BATCH
    twin = Curriculum(TASKS, group_size=GROUP, seed=3)  # the same curriculum, never told a reward
    served, twin_served = [], []
    for _epoch in range(3):
        for batch_dict in loader:
            tasks = [int(i) for i in batch_dict["index"]]
            assert len(set(tasks)) == BATCH  # distinct prompts, each rolled out GROUP times below
            served.append(tasks)
            twin_served.append([int(t) for t in twin.next_indices(BATCH)])
            sampler.update(batch=scored(batch_dict))
    state = sampler.curriculum.state()
    assert state.reports == len(served) * BATCH  # every group of every step reached the curriculum
    assert served == sampler.served
    assert served[0] == twin_served[0]  # the same seed serves the same first step …
    assert served != twin_served  # … and the rewards changed what came after
    seen = state.reported > 0
    solvable = np.array([task in SOLVABLE for task in range(TASKS)])
    assert state.p_informative[seen & solvable].min() > state.p_informative[seen & ~solvable].max()
    assert state.informative[~solvable].sum() == 0 and state.informative[solvable].sum() > 0


def test_a_batch_without_task_indices_or_from_another_step_is_refused_and_changes_nothing(
    tmp_path: Path,
) -> None:
    sampler, loader = _sampler_and_loader(_data_config(tmp_path))
    batch_dict = next(iter(loader))
    batch = scored(batch_dict)
    before = sampler.curriculum.state().reported.copy()
    del batch.non_tensor_batch["index"]
    with pytest.raises(DataError, match=r"no 'index' column .*extra_info.index"):
        sampler.update(batch)
    batch = scored(batch_dict)
    batch.non_tensor_batch["index"][-1] = (int(batch.non_tensor_batch["index"][0]) + 1) % TASKS
    with pytest.raises(DataError, match="mixes task indices"):
        sampler.update(batch)
    assert (sampler.curriculum.state().reported == before).all()
    sampler.update(scored(batch_dict))
    with pytest.raises(DataError, match="no served group waiting"):
        sampler.update(scored(batch_dict))  # the same step twice
    assert sampler.curriculum.state().reports == BATCH


def test_options_are_checked_and_state_persists(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown option 'polcy'"):
        _sampler_and_loader(_data_config(tmp_path, "sampler.polcy=uniform"))
    state = tmp_path / "curriculum.state"
    sampler, loader = _sampler_and_loader(
        _data_config(tmp_path, f"sampler.state_path={state}", "sampler.save_every=1")
    )
    sampler.update(scored(next(iter(loader))))
    resumed, _ = _sampler_and_loader(_data_config(tmp_path, f"sampler.state_path={state}"))
    assert resumed.curriculum.state().reports == BATCH


VERL_071 = """
import sys
from pathlib import Path

import numpy as np
import verl
from omegaconf import OmegaConf
from torchdata.stateful_dataloader import StatefulDataLoader
from verl.experimental.dataset.sampler import AbstractCurriculumSampler, AbstractSampler
from verl.trainer.main_ppo import create_rl_sampler
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

from tests.curriculum import test_verl as t, tiny_lm

assert verl.__version__ == "0.7.1", verl.__version__
tmp = Path(sys.argv[1])
config = t._data_config(tmp, "sampler.seed=3")  # veRL 0.7.1's own legacy_data.yaml + the sampler lines
dataset = RLHFDataset(config.train_files, tiny_lm.tokenizer(), config)
sampler = create_rl_sampler(config, dataset)  # 0.7.1 loads the class and asserts it is an AbstractSampler
assert isinstance(sampler, AbstractSampler) and isinstance(sampler, AbstractCurriculumSampler)
loader = StatefulDataLoader(  # as 0.7.1's RayPPOTrainer._create_dataloader builds the train loader
    dataset=dataset, batch_size=config.train_batch_size, num_workers=config.dataloader_num_workers,
    drop_last=True, collate_fn=collate_fn, sampler=sampler,
)
for _epoch in range(3):
    for batch_dict in loader:
        batch = t.scored(batch_dict)
        if isinstance(loader.sampler, AbstractCurriculumSampler):  # 0.7.1's fit loop, after the reward step
            loader.sampler.update(batch=batch)
state = sampler.curriculum.state()
assert state.reports == 3 * len(loader) * t.BATCH, state.reports
solvable = np.array([task in t.SOLVABLE for task in range(t.TASKS)])
seen = state.reported > 0
assert state.p_informative[seen & solvable].min() > state.p_informative[seen & ~solvable].max()
print("ok")
"""


def test_verl_0_7_1_builds_the_curriculum_sampler_from_data_sampler_and_updates_it(tmp_path: Path) -> None:
    """The hook the veRL docs name (``data.sampler.class_path`` → ``AbstractCurriculumSampler``) with the
    real veRL 0.7.1 from PyPI: its releases with the hook declare ``numpy<2``, so ``make install`` puts it,
    without dependencies, into ``.venv/verl-0.7.1`` (our pinned torch, numpy 2, tensordict run it), and this
    test puts that folder first on the path of a child interpreter."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    target = Path(sys.prefix) / "verl-0.7.1"
    assert (target / "verl" / "experimental" / "dataset" / "sampler.py").is_file(), (
        f"veRL 0.7.1 is not installed in {target}: run `make install`"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(REPO_ROOT)])}
    out = subprocess.run(
        [sys.executable, "-c", VERL_071, str(tmp_path)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
