"""Running a command's coroutine: on uvloop where it is installed (Linux, macOS), asyncio otherwise.

The collector's event loop handles every rollout's request and reply; uvloop's loop costs roughly half of
the standard selector loop per I/O event, which shows at 10^3 rollouts/s. While the loop runs, garbage
cycles are collected every 20,000 net allocations instead of every 700 (as in a server process,
``rewardgym.launch.serve.GC_THRESHOLDS``): each rollout allocates hundreds of short-lived containers, and the
default ran a young-generation collection every rollout or two. The previous thresholds are restored after.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
_GC_THRESHOLDS = (20_000, 20, 20)  # the value of rewardgym.launch.serve.GC_THRESHOLDS


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)`` on a uvloop event loop when uvloop is available."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - Windows
        return asyncio.run(coro)
    before = gc.get_threshold()
    gc.set_threshold(*_GC_THRESHOLDS)
    try:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(coro)
    finally:
        gc.set_threshold(*before)
