"""Per-task state of the curriculum as flat numpy arrays (no Python object per task).

Contract:

- :class:`TaskArrays` holds, per task: discounted passes ``succ`` and failures ``fail`` (float32), the step
  they were last brought up to date ``last`` (int32), times served, groups reported, informative groups
  (int32), groups served and not yet reported ``pending`` (uint16), the current run of all-equal groups
  ``streak`` (int16) and whether the last all-equal group was all passes ``easy`` (bool) — 31 bytes a task.
- Discounting is lazy: a count stored at step ``t0`` is worth ``2^−(t − t0)/h`` of itself at step ``t``
  (``h`` the half-life in steps). :meth:`TaskArrays.counts_at` gives the discounted counts of any tasks
  without touching the others, so a step costs nothing for the tasks it does not serve.
- Cold start: :meth:`TaskArrays.seed_counts` puts a profile's passes / failures in as of step 0.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import numpy.typing as npt

ARRAY_TYPES: dict[str, type[np.generic]] = {
    "succ": np.float32,
    "fail": np.float32,
    "last": np.int32,
    "served": np.int32,
    "groups": np.int32,
    "informative": np.int32,
    "pending": np.uint16,
    "streak": np.int16,
    "easy": np.bool_,
}
PENDING_MAX = int(np.iinfo(np.uint16).max)


@dataclass
class TaskArrays:
    """The per-task arrays of the module doc (all of length ``size``)."""

    succ: npt.NDArray[np.float32]
    fail: npt.NDArray[np.float32]
    last: npt.NDArray[np.int32]
    served: npt.NDArray[np.int32]
    groups: npt.NDArray[np.int32]
    informative: npt.NDArray[np.int32]
    pending: npt.NDArray[np.uint16]
    streak: npt.NDArray[np.int16]
    easy: npt.NDArray[np.bool_]

    @staticmethod
    def empty(size: int) -> TaskArrays:
        return TaskArrays(**{name: np.zeros(size, kind) for name, kind in ARRAY_TYPES.items()})

    @property
    def size(self) -> int:
        return int(self.succ.shape[0])

    @property
    def nbytes(self) -> int:
        return sum(int(getattr(self, f.name).nbytes) for f in fields(self))

    def as_dict(self) -> dict[str, npt.NDArray[np.generic]]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @staticmethod
    def from_dict(arrays: dict[str, npt.NDArray[np.generic]], size: int) -> TaskArrays | str:
        """The arrays, or why they cannot be (a missing array, a wrong length or type)."""
        for name, kind in ARRAY_TYPES.items():
            value = arrays.get(name)
            if value is None:
                return f"array {name!r} is missing"
            if value.shape != (size,) or value.dtype != np.dtype(kind):
                expected = f"({size},) {np.dtype(kind)}"
                return f"array {name!r} is {value.shape} {value.dtype}, expected {expected}"
        return TaskArrays(**{name: np.ascontiguousarray(arrays[name]) for name in ARRAY_TYPES})

    def counts_at(
        self, tasks: npt.NDArray[np.integer], step: int, half_life: float
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """Discounted (passes, failures) of ``tasks`` as of ``step``."""
        age = (step - self.last[tasks]).astype(np.float32)
        keep = np.exp2(-age / np.float32(half_life)) if np.isfinite(half_life) else np.float32(1.0)
        return self.succ[tasks] * keep, self.fail[tasks] * keep

    def add_group(
        self, task: int, step: int, half_life: float, passes: float, failures: float, carry: float = 1.0
    ) -> None:
        """Discount ``task`` up to ``step``, then by ``carry`` (what a task's own training step leaves of
        the older evidence), and add one group's passes and failures."""
        age = step - int(self.last[task])
        keep = carry * (2.0 ** (-age / half_life) if age > 0 and np.isfinite(half_life) else 1.0)
        self.succ[task] = np.float32(float(self.succ[task]) * keep + passes)
        self.fail[task] = np.float32(float(self.fail[task]) * keep + failures)
        self.last[task] = step

    def seed_counts(self, passes: npt.NDArray[np.floating], failures: npt.NDArray[np.floating]) -> None:
        self.succ[:] = passes
        self.fail[:] = failures
