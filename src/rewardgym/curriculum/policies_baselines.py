"""The baseline policies: ``dynamic-sampling`` (DAPO), ``greso`` (arXiv 2506.02177) and ``thompson``
(MoPPS, arXiv 2507.04632), each as its paper describes it, on the curriculum's shared per-task arrays.

- ``dynamic-sampling`` walks the epochs as ``uniform`` does and over-samples: a batch of ``n`` serves
  ``n / r`` tasks, ``r`` the informative share of the groups reported so far (at most ``max_oversample``
  × ``n``; ``oversample`` fixes the factor). The trainer drops the all-equal groups (``report`` returns
  ``False`` for them) and asks again until its batch is full — what DAPO does in veRL.
- ``greso`` walks the epochs too, and skips a task whose last ``z`` groups were all equal with
  probability ``1 − p^z`` (``p`` separate for tasks last seen all-pass, "easy", and all-fail, "hard"),
  before any rollout. After each batch, ``p`` moves by ``step`` toward keeping the share of all-equal
  groups of that kind at its target (``target_easy``, ``target_hard``), within ``[p_min, 1]``.
- ``thompson`` draws ``candidates × n`` tasks at random, samples each one's pass rate from its discounted
  Beta(1 + passes, 1 + failures) and serves the ``n`` whose sample is closest to ``target`` (0.5).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from rewardgym.curriculum.policies import Uniform
from rewardgym.curriculum.policy import Indices, Policy, register
from rewardgym.errors import UsageError


def _positive(policy: str, name: str, value: Any, low: float, high: float = math.inf) -> float:
    number = float(value)
    if not low <= number <= high:
        raise UsageError(f"policy {policy!r}: {name} must be in [{low}, {high}], got {value}")
    return number


@register("dynamic-sampling")
class DynamicSampling(Uniform):
    """See module doc."""

    options: ClassVar[dict[str, Any]] = {"oversample": None, "max_oversample": 3.0}

    def __init__(self, host: Any, options: Mapping[str, Any]) -> None:
        super().__init__(host, options)
        if self.settings["oversample"] is not None:
            _positive(self.name, "oversample", self.settings["oversample"], 1.0)
        _positive(self.name, "max_oversample", self.settings["max_oversample"], 1.0)

    def factor(self) -> float:
        fixed = self.settings["oversample"]
        if fixed is not None:
            return float(fixed)
        host = self.host
        cap = float(self.settings["max_oversample"])
        if host.reports == 0:
            return 1.0
        rate = host.informative_total / host.reports
        return min(cap, 1.0 / max(rate, 1.0 / cap))

    def select(self, n: int, group: int) -> Indices:
        return self.take(math.ceil(n * self.factor()))


@register("greso")
class Greso(Uniform):
    """See module doc."""

    options: ClassVar[dict[str, Any]] = {
        "p_start": 0.5,
        "p_min": 0.05,
        "step": 0.01,
        "target_easy": 0.0833,
        "target_hard": 0.1667,
    }

    def __init__(self, host: Any, options: Mapping[str, Any]) -> None:
        super().__init__(host, options)
        for name in self.options:
            _positive(self.name, name, self.settings[name], 0.0, 1.0)
        self.p_easy = self.p_hard = float(self.settings["p_start"])
        self._seen = self._easy = self._hard = 0

    def select(self, n: int, group: int) -> Indices:
        self._adapt()
        host = self.host
        kept: list[Indices] = []
        have = walked = 0
        while have < n and walked < host.size:  # at most one epoch's walk per batch
            chunk = self.take(min(2 * (n - have), host.size - walked))
            streak = host.arrays.streak[chunk].astype(np.float64)
            base = np.where(host.arrays.easy[chunk], self.p_easy, self.p_hard)
            keep = host.rng.random(chunk.shape[0]) < base**streak  # z = 0: always kept
            total = np.cumsum(keep)
            if total.shape[0] and int(total[-1]) > n - have:  # full: the rest of the chunk goes back
                cut = int(np.searchsorted(total, n - have)) + 1
                self.untake(chunk.shape[0] - cut)
                chunk, keep = chunk[:cut], keep[:cut]
            walked += chunk.shape[0]
            kept.append(chunk[keep])
            have += int(keep.sum())
        tasks = np.concatenate(kept) if kept else np.zeros(0, np.int64)
        _, first = np.unique(tasks, return_index=True)  # an epoch boundary inside the walk
        return np.asarray(tasks[np.sort(first)], dtype=np.int64)

    def observe(self, task: int, passes: float, failures: float, informative: bool) -> None:
        self._seen += 1
        if not informative:
            if passes > 0:
                self._easy += 1
            else:
                self._hard += 1

    def _adapt(self) -> None:
        """Move each exploration probability toward its target share of all-equal groups."""
        if self._seen == 0:
            return
        step, low = float(self.settings["step"]), float(self.settings["p_min"])
        easy, hard = self._easy / self._seen, self._hard / self._seen
        self.p_easy += -step if easy > float(self.settings["target_easy"]) else step
        self.p_hard += -step if hard > float(self.settings["target_hard"]) else step
        self.p_easy, self.p_hard = (min(1.0, max(low, p)) for p in (self.p_easy, self.p_hard))
        self._seen = self._easy = self._hard = 0

    def state(self) -> dict[str, Any]:
        return {**super().state(), "p_easy": self.p_easy, "p_hard": self.p_hard}

    def restore(self, state: Mapping[str, Any]) -> None:
        super().restore(state)
        self.p_easy = float(state.get("p_easy", self.p_easy))
        self.p_hard = float(state.get("p_hard", self.p_hard))


@register("thompson")
class Thompson(Policy):
    """See module doc."""

    options: ClassVar[dict[str, Any]] = {"candidates": 4.0, "target": 0.5}

    def __init__(self, host: Any, options: Mapping[str, Any]) -> None:
        super().__init__(host, options)
        _positive(self.name, "candidates", self.settings["candidates"], 1.0)
        _positive(self.name, "target", self.settings["target"], 0.0, 1.0)

    def select(self, n: int, group: int) -> Indices:
        host = self.host
        want = min(host.size, math.ceil(float(self.settings["candidates"]) * n))
        if host.size <= 4 * want:
            pool = host.rng.choice(host.size, size=want, replace=False).astype(np.int64)
        else:
            pool = np.unique(host.rng.integers(host.size, size=want))
        succ, fail = host.arrays.counts_at(pool, host.step, host.half_life)
        sample = host.rng.beta(1.0 + succ, 1.0 + fail)
        distance = np.abs(sample - float(self.settings["target"]))
        distance += (host.arrays.pending[pool] > 0) * 2.0  # not twice in flight
        take = min(n, pool.shape[0])
        best = np.argpartition(distance, take - 1)[:take] if take < pool.shape[0] else np.arange(take)
        return np.asarray(pool[best], dtype=np.int64)
