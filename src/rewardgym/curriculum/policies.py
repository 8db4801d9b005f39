"""``uniform``: the epoch walk that the other walking policies build on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rewardgym.curriculum.policy import Indices, Policy, register


@register("uniform")
class Uniform(Policy):
    """Every task once per epoch in a fresh random order — what a trainer's shuffled data loader does.

    The order of epoch ``e`` is a permutation drawn from ``(seed, e)``, so a restart only needs the epoch
    and the position in it."""

    def __init__(self, host: Any, options: Mapping[str, Any]) -> None:
        super().__init__(host, options)
        self.epoch = 0
        self.position = 0
        self._order: Indices | None = None

    def _permutation(self) -> Indices:
        if self._order is None:
            rng = np.random.default_rng([self.host.seed, self.epoch])
            self._order = rng.permutation(self.host.size).astype(np.int64)
        return self._order

    def take(self, n: int) -> Indices:
        """The next ``min(n, tasks)`` distinct tasks of the walk. Across an epoch's end, the new epoch's
        tasks already in this batch are passed over (served at the old epoch's end, they count for both)."""
        wanted = min(n, self.host.size)
        order = self._permutation()
        first = order[self.position : self.position + wanted]
        self.position += first.shape[0]
        if self.position >= order.shape[0]:
            self.epoch, self.position, self._order = self.epoch + 1, 0, None
        wanted -= first.shape[0]
        if wanted == 0:
            return np.asarray(first, dtype=np.int64)
        order = self._permutation()
        ahead = order[: wanted + first.shape[0]]
        fresh = ~np.isin(ahead, first)
        stop = int(np.searchsorted(np.cumsum(fresh), wanted)) + 1
        self.position = stop
        return np.asarray(np.concatenate([first, ahead[:stop][fresh[:stop]]]), dtype=np.int64)

    def untake(self, count: int) -> None:
        """Give back the last ``count`` tasks taken (within the current epoch; else they stay taken)."""
        if 0 < count <= self.position:
            self.position -= count

    def select(self, n: int, group: int) -> Indices:
        return self.take(n)

    def replayed(self, tasks: Indices) -> None:
        self.take(tasks.shape[0])

    def state(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "position": self.position}

    def restore(self, state: Mapping[str, Any]) -> None:
        self.epoch = int(state.get("epoch", 0))
        self.position = int(state.get("position", 0))
        self._order = None
