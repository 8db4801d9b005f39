"""Running a few numpy-heavy calls at once on threads (numpy releases the GIL in its loops).

Contract of :func:`run_all(calls)`: every call runs — the first in this thread, the others each in a new
thread — and all have finished when it returns (no thread outlives it: the profiler forks processes
afterwards). The first exception raised by any call is re-raised here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence


def run_all(calls: Sequence[Callable[[], None]]) -> None:
    """Run ``calls`` concurrently (see module doc)."""
    if not calls:
        return
    failures: list[BaseException] = []

    def guarded(call: Callable[[], None]) -> None:
        try:
            call()
        except BaseException as exc:  # re-raised by the calling thread
            failures.append(exc)

    workers = [threading.Thread(target=guarded, args=(call,), name="profile-numpy") for call in calls[1:]]
    for worker in workers:
        worker.start()
    try:
        calls[0]()
    finally:
        for worker in workers:
            worker.join()
    if failures:
        raise failures[0]
