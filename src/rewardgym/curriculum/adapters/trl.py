"""TRL: a ``GRPOTrainer`` whose prompts come from the curriculum, and a reward function that reports them.

Usage (docs/curriculum.md, "Trainers"; tested with TRL 1.16 on the CPU)::

    curriculum = Curriculum(rows, group_size=G)
    trainer = CurriculumGRPOTrainer(
        model=…, args=GRPOConfig(num_generations=G, …),
        train_dataset=Dataset.from_list([curriculum.row(i) for i in range(len(rows))]),
        reward_funcs=[reporting(my_reward, curriculum, G)],
        curriculum=curriculum,
    )

Contract:

- :class:`CurriculumGRPOTrainer` is ``GRPOTrainer`` with one more keyword, ``curriculum`` (a
  :class:`~rewardgym.curriculum.adapters.source.BatchSource`); its train sampler is a
  :class:`~rewardgym.curriculum.adapters.sampler.CurriculumSampler` laid out as TRL's own ``RepeatSampler``:
  each generation asks the curriculum for ``generation_batch_size / num_generations`` prompts, every prompt
  ``num_generations`` times in a row, each generation batch ``num_iterations × steps_per_generation`` times.
  A pass is ``len(train_dataset)`` prompts; dataset position ``i`` must be task ``i``. One process only (the
  processes of a multi-GPU run would each ask the curriculum for different prompts): more is a UsageError.
- :func:`reporting` wraps a TRL reward function: it returns the same rewards and reports each prompt's
  ``num_generations`` rewards as one group, read with the dataset's ``_ng_task_index`` column; a group with
  a ``None`` reward (TRL: "no reward") is not reported, nor is an evaluation call (model not training).
  The accelerate loader fetches one batch ahead, so the curriculum picks a generation before the rewards of
  the one just before it are in (one step of lag).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from torch.utils.data import Sampler
from trl.trainer.grpo_trainer import GRPOTrainer

from rewardgym.curriculum.adapters.sampler import CurriculumSampler
from rewardgym.curriculum.adapters.source import BatchSource, GroupReporter, groups_in_runs
from rewardgym.errors import DataError, UsageError

TASK_KEY = "_ng_task_index"

RewardFunc = Callable[..., Sequence[float | None]]


class Reporting:
    """A TRL reward function that also reports every training group to the curriculum (module docstring)."""

    def __init__(self, reward_func: RewardFunc, curriculum: GroupReporter, group_size: int) -> None:
        self.reward_func = reward_func
        self.curriculum = curriculum
        self.group_size = group_size
        self.__name__ = getattr(reward_func, "__name__", type(reward_func).__name__)  # TRL logs by it
        self.training: Callable[[], bool] = lambda: True
        """Whether a call scores training groups; CurriculumGRPOTrainer sets it (evaluation is not served)."""

    def __call__(self, *, prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        rewards = list(self.reward_func(prompts=prompts, completions=completions, **kwargs))
        if not self.training():
            return rewards
        if TASK_KEY not in kwargs:
            raise DataError(f"curriculum reward: the train dataset has no {TASK_KEY!r} column")
        values = [math.nan if r is None else float(r) for r in rewards]
        groups = groups_in_runs(kwargs[TASK_KEY], values, self.group_size, TASK_KEY)
        self.curriculum.report_groups([(task, g) for task, g in groups if not any(map(math.isnan, g))])
        return rewards


def reporting(reward_func: RewardFunc, curriculum: GroupReporter, group_size: int) -> Reporting:
    """``reward_func`` that also reports every training group's rewards to ``curriculum``."""
    return Reporting(reward_func, curriculum, group_size)


class CurriculumGRPOTrainer(GRPOTrainer):
    """See the module docstring."""

    def __init__(self, *args: Any, curriculum: BatchSource, **kwargs: Any) -> None:
        self.curriculum = curriculum
        self.curriculum_sampler: CurriculumSampler | None = None
        super().__init__(*args, **kwargs)
        for func in self.reward_funcs:
            if isinstance(func, Reporting):
                func.training = lambda: bool(getattr(self.model, "training", True))  # TRL's train / eval
        if self.accelerator.num_processes > 1:
            raise UsageError(
                f"CurriculumGRPOTrainer runs in one process ({self.accelerator.num_processes} were started)"
            )

    def _get_train_sampler(self, dataset: Any = None) -> Sampler[int]:
        data: Any = self.train_dataset if dataset is None else dataset
        args: Any = self.args  # a GRPOConfig
        group = int(self.num_generations or 1)
        prompts = int(args.generation_batch_size) // group
        self.curriculum_sampler = CurriculumSampler(
            self.curriculum,
            batch_size=prompts,
            num_batches=max(1, len(data) // prompts),
            group_size=group,
            repeat_each=group,
            repeat_batch=int(self.num_iterations) * int(args.steps_per_generation),
        )
        return self.curriculum_sampler
