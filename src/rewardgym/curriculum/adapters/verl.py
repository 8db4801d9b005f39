"""veRL's curriculum sampler: veRL asks it for the prompts of each step and hands it the scored batch.

Configuration (veRL ≤ 0.7.1 builds the sampler from the config and calls :meth:`VerlCurriculumSampler.update`
after every step — tested with the real veRL 0.7.1, ``tests/curriculum/test_verl.py``; docs/curriculum.md has
the full command line)::

    data.sampler.class_path=pkg://rewardgym.curriculum.adapters.verl
    data.sampler.class_name=VerlCurriculumSampler
    data.dataloader_num_workers=0
    +data.sampler.group_size=<actor_rollout_ref.rollout.n>

Contract:

- ``VerlCurriculumSampler(data_source, data_config)`` — veRL's constructor signature. Dataset position
  ``i`` is curriculum task ``i``; each step serves ``data.train_batch_size`` tasks; a pass is
  ``len(dataset) // train_batch_size`` steps (at least one). Options, under ``data.sampler`` (an unknown one
  is an error naming it): ``policy``, ``group_size``, ``seed`` (else ``data.seed``, else 0), ``state_path``,
  ``half_life``, ``reward_range``, ``pass_threshold``, ``save_every``, ``policy_options``, and
  ``index_key`` — the batch column that holds each prompt's task index (``index``: veRL's ``RLHFDataset``
  copies each row's ``extra_info.index`` there, so the parquet's ``extra_info.index`` must be the row's
  position, as veRL's own preprocessing scripts write it). ``url`` (and ``token_env``, the name of the
  environment variable that holds the service's token — never the token itself) serves from
  ``gym curriculum serve`` through :class:`~rewardgym.curriculum.adapters.client.CurriculumClient` instead
  of an in-process curriculum; the curriculum's own settings then belong to the service.
- :meth:`update` ``(batch: DataProto)`` — one reward per completion, ``token_level_scores`` summed over the
  response (the verifier's score, before any KL penalty), grouped by veRL's ``uid`` (one per prompt copy),
  all reported at once: a batch without the index column, a group that mixes tasks, a reward outside the
  range or a task that was not served is a one-line error and the curriculum is unchanged.
- With veRL ≥ 0.8 (which removed ``data.sampler``), pass the sampler as ``RayPPOTrainer(train_sampler=…)``
  and call :meth:`update` after the reward step in your trainer (docs: not tested here against that loop).
"""

from __future__ import annotations

import os
from collections.abc import Sized
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from rewardgym.curriculum.adapters.client import CurriculumClient
from rewardgym.curriculum.adapters.sampler import CurriculumSampler
from rewardgym.curriculum.adapters.source import groups_by_id
from rewardgym.curriculum.core import Curriculum
from rewardgym.errors import DataError, UsageError

if TYPE_CHECKING:
    from verl import DataProto

    _Base = CurriculumSampler
else:  # veRL ≤ 0.7.1 checks isinstance(sampler, AbstractSampler); later releases have no such class
    try:
        from verl.experimental.dataset.sampler import AbstractCurriculumSampler

        class _Base(CurriculumSampler, AbstractCurriculumSampler):
            pass

    except ImportError:
        _Base = CurriculumSampler

OPTIONS = frozenset(
    {
        "class_path",
        "class_name",
        "policy",
        "group_size",
        "seed",
        "state_path",
        "half_life",
        "reward_range",
        "pass_threshold",
        "save_every",
        "policy_options",
        "index_key",
        "url",
        "token_env",
    }
)
LOCAL = frozenset(
    {"policy", "seed", "state_path", "half_life", "reward_range", "pass_threshold", "save_every"}
)
"""Options of an in-process curriculum (with ``url`` the service has its own)."""
SCORES = "token_level_scores"
GROUP_ID = "uid"


def _plain(value: Any) -> Any:
    """An OmegaConf node as plain Python (veRL's config is OmegaConf; a test may pass a dict)."""
    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    return value


class VerlCurriculumSampler(_Base):
    """See the module docstring."""

    def __init__(self, data_source: Sized, data_config: Any) -> None:
        options = dict(_plain(data_config.get("sampler")) or {})
        unknown = sorted(set(options) - OPTIONS)
        if unknown:
            raise UsageError(
                f"data.sampler: unknown option {unknown[0]!r} (known: {', '.join(sorted(OPTIONS))})"
            )
        batch = data_config.get("train_batch_size")
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise UsageError(f"data.train_batch_size must be a positive integer, got {batch!r}")
        size = len(data_source)
        group = int(options.get("group_size", 8))
        self.curriculum: Curriculum | CurriculumClient
        if "url" in options:
            local = sorted(LOCAL & set(options))
            if local:
                raise UsageError(
                    f"data.sampler: {local[0]!r} is the service's setting, not the sampler's (url is set)"
                )
            token_env = options.get("token_env")
            token = os.environ.get(str(token_env)) if token_env else None
            if token_env and not token:
                raise UsageError(f"data.sampler.token_env: the environment variable {token_env} is not set")
            self.curriculum = CurriculumClient(str(options["url"]), token=token)
        else:
            self.curriculum = self._local(size, group, options, data_config.get("seed"))
        self.index_key = str(options.get("index_key", "index"))
        super().__init__(self.curriculum, batch, max(1, size // batch), group_size=group)

    @staticmethod
    def _local(size: int, group: int, options: dict[str, Any], data_seed: Any) -> Curriculum:
        seed = options.get("seed", data_seed)
        state_path = options.get("state_path")
        kwargs: dict[str, Any] = {
            key: options[key] for key in ("half_life", "pass_threshold", "save_every") if key in options
        }
        if "reward_range" in options:
            kwargs["reward_range"] = tuple(options["reward_range"])
        return Curriculum(
            size,
            policy=str(options.get("policy", "expected-signal")),
            group_size=group,
            seed=0 if seed is None else int(seed),
            state_path=None if state_path is None else Path(str(state_path)),
            policy_options=options.get("policy_options"),
            **kwargs,
        )

    def update(self, batch: DataProto) -> None:
        """Report every group of a scored batch to the curriculum (module docstring)."""
        columns = batch.non_tensor_batch
        missing = [key for key in (self.index_key, GROUP_ID) if key not in columns]
        if missing or batch.batch is None or batch.batch.get(SCORES, None) is None:
            what = missing[0] if missing else SCORES
            raise DataError(
                f"veRL batch: no {what!r} column to report to the curriculum"
                + (
                    " (set extra_info.index to each row's position in the parquet, or data.sampler.index_key)"
                    if what == self.index_key
                    else ""
                )
            )
        rewards = batch.batch[SCORES].sum(dim=-1).tolist()
        groups = groups_by_id(list(columns[self.index_key]), rewards, list(columns[GROUP_ID]), self.index_key)
        self.curriculum.report_groups(groups)
