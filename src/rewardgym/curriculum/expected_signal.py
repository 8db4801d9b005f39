"""``expected-signal``: serve the tasks most likely to give an informative group of G, under the posterior.

Each candidate's score is E[q] + ``explore`` · sd[q], q = P(a group of G is not all equal), both under the
task's posterior (the pool prior × its discounted passes / failures, :mod:`rewardgym.curriculum.table`),
q taken ``drift`` ahead (the curriculum's estimate of how far a task's pass rate moves until it is served
again; ``drift: false`` turns that off). A task never seen, or seen long ago (its counts decayed), has a
wide posterior and so a bonus: that is the exploration of unseen and stale tasks. ``window = [low,
high]`` multiplies the score by P(low ≤ p ≤ high) (a target difficulty); ``quotas = {domain: share}``
reserves ``share`` of every batch for each domain (the curriculum's ``domain_key``). Tasks served and not
yet reported come last.

Scale: with at most ``scan`` tasks every task is scored. With more, a batch scores ``scan`` tasks drawn
at random plus the ``hot`` most recent tasks that gave an informative group (a ring of task indices): a
tournament whose cost does not grow with the pool (10^4 tasks or 10^7), and which keeps the tasks that
are known to teach in the running — drawn at random, a given task would be a candidate once in ~120 batches
of a 10^6 pool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from rewardgym.curriculum.policy import Indices, Policy, distinct_top, register
from rewardgym.curriculum.table import LEVELS, SignalTable, quantize
from rewardgym.errors import UsageError

_NAME = "policy 'expected-signal'"


@register("expected-signal")
class ExpectedSignal(Policy):
    """See the module docstring."""

    options: ClassVar[dict[str, Any]] = {
        "explore": 1.25,
        "drift": True,
        "window": None,
        "quotas": None,
        "scan": 8192,
        "hot": 8192,
    }

    def __init__(self, host: Any, options: Mapping[str, Any]) -> None:
        super().__init__(host, options)
        window = self.settings["window"]
        if window is not None:
            low, high = (float(v) for v in window)
            if not 0.0 <= low < high <= 1.0:
                raise UsageError(f"{_NAME}: window must be 0 ≤ low < high ≤ 1, got {window}")
            self.settings["window"] = (low, high)
        quotas = self.settings["quotas"]
        if quotas is not None:
            members = host.domain_members()
            if members is None:
                raise UsageError(f"{_NAME}: quotas need the curriculum's domain_key")
            unknown = sorted(set(quotas) - set(members))
            if unknown:
                raise UsageError(f"{_NAME}: quotas name unknown domains {unknown}")
            shares = [float(v) for v in quotas.values()]
            if min(shares, default=0.0) < 0 or sum(shares) > 1 + 1e-9:
                raise UsageError(f"{_NAME}: quota shares must be ≥ 0 and sum to at most 1")
        if int(self.settings["scan"]) < 1 or int(self.settings["hot"]) < 0:
            raise UsageError(f"{_NAME}: scan must be ≥ 1 and hot ≥ 0")
        self._everyone = np.arange(host.size, dtype=np.int64)
        self._hot = np.full(int(self.settings["hot"]), -1, dtype=np.int64)
        self._hot_next = 0
        self._in_hot = np.zeros(host.size if self._hot.shape[0] else 0, dtype=np.bool_)  # no task twice
        self._flat: tuple[SignalTable, npt.NDArray[np.float32]] | None = None

    def candidates(self, pool: Indices, want: int, *, everyone: bool) -> Indices:
        scan = max(int(self.settings["scan"]), 4 * want)
        if pool.shape[0] <= scan:
            return pool
        drawn = pool[self.host.rng.integers(pool.shape[0], size=scan)]
        if not everyone or self._hot.shape[0] == 0:
            return drawn
        hot = self._hot[self._hot >= 0]
        return np.concatenate([hot, drawn])

    def _scores(self, group: int) -> npt.NDArray[np.float32]:
        """The score of every (passes level, failures level) cell, flat (one gather per candidate)."""
        host = self.host
        table = host.table(group, host.forecast_drift if self.settings["drift"] else 0.0)
        if self._flat is None or self._flat[0] is not table:
            score = table.mean + np.float32(self.settings["explore"]) * table.sd
            if self.settings["window"] is not None:
                score = score * table.prob_between(*self.settings["window"])
            self._flat = (table, np.ascontiguousarray(score, dtype=np.float32).reshape(-1))
        return self._flat[1]

    def score(self, tasks: Indices, group: int) -> npt.NDArray[np.float32]:
        host = self.host
        succ, fail = host.arrays.counts_at(tasks, host.step, host.half_life)
        cell = quantize(succ) * LEVELS + quantize(fail)
        score = self._scores(group)[cell] - (host.arrays.pending[tasks] > 0)  # not twice in flight
        noise = host.rng.random(tasks.shape[0], dtype=np.float32) * np.float32(1e-4)  # ties: at random
        return np.asarray(score + noise, dtype=np.float32)

    def best(self, pool: Indices, n: int, group: int, *, everyone: bool = True) -> Indices:
        tasks = self.candidates(pool, n, everyone=everyone)
        return distinct_top(tasks, self.score(tasks, group), n)

    def select(self, n: int, group: int) -> Indices:
        quotas = self.settings["quotas"]
        if not quotas:
            return self.best(self._everyone, n, group)
        members = self.host.domain_members() or {}
        chosen = [
            self.best(members[d], int(float(share) * n), group, everyone=False)
            for d, share in sorted(quotas.items())
        ]
        taken = np.concatenate(chosen) if chosen else np.zeros(0, np.int64)
        rest = n - taken.shape[0]
        if rest > 0:
            extra = self.best(self._everyone, rest + taken.shape[0], group)
            extra = extra[~np.isin(extra, taken)][:rest]
            taken = np.concatenate([taken, extra])
        return np.asarray(taken, dtype=np.int64)

    def observe(self, task: int, passes: float, failures: float, informative: bool) -> None:
        if informative and self._hot.shape[0] and not self._in_hot[task]:
            slot = self._hot_next % self._hot.shape[0]
            if self._hot[slot] >= 0:
                self._in_hot[self._hot[slot]] = False
            self._hot[slot] = task
            self._in_hot[task] = True
            self._hot_next += 1

    def state(self) -> dict[str, Any]:
        return {"hot": self._hot[self._hot >= 0].tolist(), "hot_next": self._hot_next}

    def restore(self, state: Mapping[str, Any]) -> None:
        hot = list(dict.fromkeys(int(t) for t in state.get("hot", []) if 0 <= int(t) < self.host.size))
        hot = hot[: self._hot.shape[0]]
        self._hot[: len(hot)] = hot
        self._in_hot[hot] = True
        self._hot_next = int(state.get("hot_next", len(hot)))
