"""A plain ``torch.utils.data.Sampler`` and ``IterableDataset`` over the curriculum, for any training loop.

Contract:

- :class:`CurriculumSampler` yields task indices (= positions in the dataset the curriculum was built on)
  for ``num_batches`` batches of ``batch_size`` prompts. Each batch is asked of the curriculum only when the
  previous one has been handed out, so with ``DataLoader(num_workers=0)`` the trainer reports a step's rewards
  before the curriculum picks the step after next (a loader that prefetches adds one step of lag; worker
  processes would each hold their own copy of an in-process curriculum, so the iterators refuse to run in
  one). ``repeat_each`` yields every index that many times in a row (one copy per completion, TRL's layout),
  ``repeat_batch`` yields each batch that many times (TRL reuses one generation for several steps).
  ``state_dict`` / ``load_state_dict`` (torchdata's ``StatefulDataLoader`` and veRL's checkpoints call them)
  carry the position in the pass and the batch being handed out: a resumed loader finishes that batch and
  asks the curriculum only for new ones — never a fast-forward through batches it would serve and drop
  (the curriculum keeps its own state: ``state_path``).
- :class:`CurriculumDataset` yields the curriculum's rows themselves (each with ``_ng_task_index``) for
  loaders that take an iterable rather than an index sampler.
- Rewards go back through the curriculum's own ``report`` / ``report_groups`` (see
  :mod:`rewardgym.curriculum.adapters.source` for turning a flat reward list into groups).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch.utils.data import IterableDataset, Sampler, get_worker_info

from rewardgym.curriculum.adapters.source import BatchSource, draw_tasks
from rewardgym.errors import UsageError


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"curriculum sampler: {name} must be a positive integer, got {value!r}")
    return value


def _main_process(what: str) -> None:
    if get_worker_info() is not None:
        raise UsageError(
            f"curriculum {what}: use DataLoader(num_workers=0) — each worker process would serve from its "
            "own copy of the curriculum and never see the rewards"
        )


class CurriculumSampler(Sampler[int]):
    """See the module docstring."""

    def __init__(
        self,
        source: BatchSource,
        batch_size: int,
        num_batches: int,
        *,
        group_size: int | None = None,
        repeat_each: int = 1,
        repeat_batch: int = 1,
    ) -> None:
        self.source = source
        self.batch_size = _positive("batch_size", batch_size)
        self.num_batches = _positive("num_batches", num_batches)
        self.group_size = group_size
        self.repeat_each = _positive("repeat_each", repeat_each)
        self.repeat_batch = _positive("repeat_batch", repeat_batch)
        self.served: list[list[int]] = []
        """Every batch handed out, in order (what the trainer was given to roll out)."""
        self._yielded = 0
        self._current: list[int] = []
        self._resume: tuple[int, list[int]] | None = None

    def __len__(self) -> int:
        return self.num_batches * self._per_batch

    @property
    def _per_batch(self) -> int:
        return self.batch_size * self.repeat_each * self.repeat_batch

    def _expand(self, tasks: list[int]) -> list[int]:
        one = [task for task in tasks for _ in range(self.repeat_each)]
        return one * self.repeat_batch

    def __iter__(self) -> Iterator[int]:
        _main_process("sampler")
        yielded, batch = self._resume or (0, [])
        self._resume = None
        self._yielded, self._current = yielded, batch
        offset = yielded % self._per_batch
        if offset and len(batch) == self.batch_size:  # resumed inside a batch: finish it first
            for task in self._expand(batch)[offset:]:
                self._yielded += 1
                yield task
        while self._yielded < len(self):
            tasks = draw_tasks(self.source, self.batch_size, self.group_size)
            self._current = tasks
            self.served.append(tasks)
            for task in self._expand(tasks):
                self._yielded += 1
                yield task

    def state_dict(self) -> dict[str, Any]:
        """Where the current pass stands: indices yielded so far and the batch being handed out."""
        return {"yielded": self._yielded, "batch": list(self._current)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume the next ``iter()`` where :meth:`state_dict` was taken."""
        try:
            yielded, batch = int(state["yielded"]), [int(task) for task in state["batch"]]
        except (KeyError, TypeError, ValueError):
            raise UsageError(f"curriculum sampler: not a sampler state: {state!r}") from None
        self._resume = (min(max(yielded, 0), len(self)), batch)


class CurriculumDataset(IterableDataset[dict[str, Any]]):
    """The curriculum's rows, ``num_batches`` batches of ``batch_size``, each batch asked for when reached."""

    def __init__(
        self, source: BatchSource, batch_size: int, num_batches: int, *, group_size: int | None = None
    ) -> None:
        self.source = source
        self.batch_size = _positive("batch_size", batch_size)
        self.num_batches = _positive("num_batches", num_batches)
        self.group_size = group_size

    def __len__(self) -> int:
        return self.num_batches * self.batch_size

    def __iter__(self) -> Iterator[dict[str, Any]]:
        _main_process("dataset")
        for _ in range(self.num_batches):
            left = self.batch_size
            while left:
                rows = self.source.next_batch(left, self.group_size)
                if not rows:
                    raise UsageError("curriculum dataset: next_batch returned no rows")
                left -= len(rows)
                yield from rows
