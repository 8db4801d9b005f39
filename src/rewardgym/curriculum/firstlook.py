"""The pool prior's data: the first group of tasks never seen before, the last :data:`RING` of them.

Why not every task's counts: a curriculum serves tasks selectively, and the tasks it keeps serving are
the ones it picked for being informative — then trained on until solved — so their counts describe the
served tasks, not the pool (fitting on them put 54 % of the prior at p = 1 in the simulator, and unseen
tasks stopped being explored). A task's *first* group is different: every unseen task has the same
posterior (the prior), so the one served is a random draw of the unseen pool, at the current policy.
The ring keeps the most recent :data:`RING` of them, so the prior follows the policy as it improves.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

RING = 4096
MIN_LOOKS = 200
"""First looks needed before they replace the starting prior."""


class FirstLooks:
    """A ring of (rollouts, passes) of first groups."""

    def __init__(self) -> None:
        self.n = np.zeros(RING, np.int16)
        self.s = np.zeros(RING, np.int16)
        self.count = 0

    def add(self, rollouts: int, passes: int) -> None:
        slot = self.count % RING
        self.n[slot], self.s[slot] = min(rollouts, 32767), min(passes, 32767)
        self.count += 1

    @property
    def enough(self) -> bool:
        return self.count >= MIN_LOOKS

    def pairs(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        held = min(self.count, RING)
        return self.n[:held].astype(np.int64), self.s[:held].astype(np.int64)

    def restore(
        self, n: npt.NDArray[np.generic] | None, s: npt.NDArray[np.generic] | None, count: int
    ) -> bool:
        """Take back a saved ring; ``False`` when the arrays do not fit."""
        if n is None or s is None or n.shape != (RING,) or s.shape != (RING,) or count < 0:
            return False
        self.n, self.s, self.count = n.astype(np.int16), s.astype(np.int16), int(count)
        return True
