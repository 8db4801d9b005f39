"""The policy registry: how a curriculum picks the tasks of the next batch.

Contract: a policy is a :class:`Policy` subclass registered with ``@register("name")``. It is built with
the curriculum (:class:`PolicyHost`: the per-task arrays, the step, the random generator, the posterior
tables) and the user's ``policy_options``; :meth:`Policy.select` returns up to ``n`` *distinct* task
indices, :meth:`Policy.observe` sees every reported group (after the arrays took it), and
:meth:`Policy.state` / :meth:`Policy.restore` carry its own few scalars through a state file (per-task
data lives in the host's arrays, never in the policy). An unknown option is an error naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from rewardgym.curriculum.state import TaskArrays
from rewardgym.curriculum.table import SignalTable
from rewardgym.errors import UsageError

Indices = npt.NDArray[np.int64]


class PolicyHost(Protocol):
    """What a policy may read of its curriculum."""

    arrays: TaskArrays
    step: int
    half_life: float
    rng: np.random.Generator
    seed: int
    reports: int
    informative_total: int

    @property
    def size(self) -> int: ...

    forecast_drift: float

    def table(self, group: int, drift: float = 0.0) -> SignalTable: ...

    def domain_members(self) -> dict[str, Indices] | None: ...


class Policy:
    """Base of every policy (see module doc)."""

    name: ClassVar[str] = ""
    options: ClassVar[dict[str, Any]] = {}
    """The policy's options and their defaults."""

    def __init__(self, host: PolicyHost, options: Mapping[str, Any]) -> None:
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            known = ", ".join(sorted(self.options)) or "none"
            raise UsageError(f"policy {self.name!r}: unknown option(s) {unknown} (its options: {known})")
        self.host = host
        self.settings: dict[str, Any] = {**self.options, **options}

    def select(self, n: int, group: int) -> Indices:
        raise NotImplementedError

    def observe(self, task: int, passes: float, failures: float, informative: bool) -> None:
        """Called once per reported group, after the host's arrays took it."""

    def replayed(self, tasks: Indices) -> None:
        """A batch of the journal is replayed at restart (``tasks`` were served before the crash)."""

    def state(self) -> dict[str, Any]:
        return {}

    def restore(self, state: Mapping[str, Any]) -> None:
        """Take back what :meth:`state` gave (a missing key keeps the fresh value)."""


POLICIES: dict[str, type[Policy]] = {}
P = TypeVar("P", bound=type[Policy])


def register(name: str) -> Callable[[P], P]:
    """Class decorator: make a policy available under ``name``."""

    def add(cls: P) -> P:
        cls.name = name
        POLICIES[name] = cls
        return cls

    return add


def distinct_top(tasks: Indices, score: npt.NDArray[np.floating], n: int) -> Indices:
    """The ``n`` best-scored distinct tasks of ``tasks`` (which may repeat), best first."""
    if tasks.shape[0] == 0:
        return tasks
    take = min(tasks.shape[0], 2 * n)
    order = np.argpartition(-score, take - 1)[:take] if take < tasks.shape[0] else np.arange(tasks.shape[0])
    order = order[np.argsort(-score[order], kind="stable")]
    _, first = np.unique(tasks[order], return_index=True)
    keep = order[np.sort(first)][:n]
    if keep.shape[0] < n and take < tasks.shape[0]:  # many repeats among the best: the slow, exact way
        order = np.argsort(-score, kind="stable")
        _, first = np.unique(tasks[order], return_index=True)
        keep = order[np.sort(first)][:n]
    return np.asarray(tasks[keep], dtype=np.int64)
