"""The built-in policies (registered on import; see :mod:`rewardgym.curriculum.policy`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from rewardgym.curriculum.policy import Indices, Policy, distinct_top, register
from rewardgym.curriculum.table import SignalTable, quantize
from rewardgym.errors import UsageError


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


@register("expected-signal")
class ExpectedSignal(Policy):
    """Serve the tasks most likely to give an informative group of G, under the posterior model.

    Each candidate's score is E[q] + ``explore`` · sd[q], q = P(a group of G is not all equal), both under
    the task's posterior (pool prior × its discounted passes / failures, :mod:`rewardgym.curriculum.table`):
    a task never seen, or seen long ago (its counts have decayed), has a wide posterior and so a bonus —
    that is the exploration of unseen and stale tasks. ``window = [low, high]`` multiplies the score by
    P(low ≤ p ≤ high) (a target difficulty); ``quotas = {domain: share}`` reserves ``share`` of every
    batch for each domain (``domain_key`` of the curriculum). Tasks served and not yet reported are put
    last. With more than ``scan`` tasks, a batch scores ``scan`` tasks drawn at random (a tournament:
    the batch is the best of them), so a step costs the same for 10^4 tasks or 10^7."""

    options: ClassVar[dict[str, Any]] = {
        "explore": 0.5,
        "drift": True,
        "window": None,
        "quotas": None,
        "scan": 65536,
    }

    def __init__(self, host: Any, options: Mapping[str, Any]) -> None:
        super().__init__(host, options)
        window = self.settings["window"]
        if window is not None:
            low, high = (float(v) for v in window)
            if not 0.0 <= low < high <= 1.0:
                raise UsageError(f"policy 'expected-signal': window must be 0 ≤ low < high ≤ 1, got {window}")
            self.settings["window"] = (low, high)
        quotas = self.settings["quotas"]
        if quotas is not None:
            members = host.domain_members()
            if members is None:
                raise UsageError("policy 'expected-signal': quotas need the curriculum's domain_key")
            unknown = sorted(set(quotas) - set(members))
            if unknown:
                raise UsageError(f"policy 'expected-signal': quotas name unknown domains {unknown}")
            if (
                any(float(v) < 0 for v in quotas.values())
                or sum(float(v) for v in quotas.values()) > 1 + 1e-9
            ):
                raise UsageError("policy 'expected-signal': quota shares must be ≥ 0 and sum to at most 1")
        if int(self.settings["scan"]) < 1:
            raise UsageError("policy 'expected-signal': scan must be ≥ 1")
        self._everyone = np.arange(host.size, dtype=np.int64)

    def candidates(self, pool: Indices, want: int) -> Indices:
        scan = max(int(self.settings["scan"]), 4 * want)
        if pool.shape[0] <= scan:
            return pool
        return pool[self.host.rng.integers(pool.shape[0], size=scan)]

    def score(self, tasks: Indices, group: int) -> npt.NDArray[np.float32]:
        host = self.host
        succ, fail = host.arrays.counts_at(tasks, host.step, host.half_life)
        qs, qf = quantize(succ), quantize(fail)
        table = host.table(group, host.drift if self.settings["drift"] else 0.0)
        score = table.mean[qs, qf] + np.float32(self.settings["explore"]) * table.sd[qs, qf]
        window = self.settings["window"]
        if window is not None:
            score = score * self._window(table)[qs, qf]
        score = score - (host.arrays.pending[tasks] > 0).astype(np.float32)  # not twice in flight
        noise = host.rng.random(tasks.shape[0], dtype=np.float32) * np.float32(1e-4)  # ties: at random
        return np.asarray(score + noise, dtype=np.float32)

    def _window(self, table: SignalTable) -> npt.NDArray[np.float32]:
        cache = getattr(self, "_window_cache", None)
        if cache is None or cache[0] is not table:
            cache = (table, table.prob_between(*self.settings["window"]))
            self._window_cache = cache
        return cache[1]

    def best(self, pool: Indices, n: int, group: int) -> Indices:
        tasks = self.candidates(pool, n)
        return distinct_top(tasks, self.score(tasks, group), n)

    def select(self, n: int, group: int) -> Indices:
        quotas = self.settings["quotas"]
        if not quotas:
            return self.best(self._everyone, n, group)
        members = self.host.domain_members() or {}
        chosen = [self.best(members[d], int(float(share) * n), group) for d, share in sorted(quotas.items())]
        taken = np.concatenate(chosen) if chosen else np.zeros(0, np.int64)
        rest = n - taken.shape[0]
        if rest > 0:
            extra = self.best(self._everyone, rest + taken.shape[0], group)
            extra = extra[~np.isin(extra, taken)][:rest]
            taken = np.concatenate([taken, extra])
        return np.asarray(taken, dtype=np.int64)
