"""A caller's deadline, carried from the collector through every server down to the model upstream.

Why: the collector gives each rollout ``rollout_timeout_s``; when it gives up, the agent, the model server
and the upstream call kept going (a model server's own read timeout is minutes), holding connections and
upstream capacity for an answer nobody waits for.

Contract:
- :data:`HEADER` (``X-Rewardgym-Deadline``) is the absolute time, Unix seconds, past which the caller no
  longer waits. The collector sends it with each attempt; a server that receives it
  (:mod:`rewardgym.servers.app`) calls :func:`enter` for the request's task.
- Every request :class:`~rewardgym.http.client.HttpClient` sends from that task (or a task it started:
  context variables are copied) carries the same header on and bounds each attempt by :func:`remaining`;
  past the deadline it sends nothing more (an :class:`~rewardgym.http.errors.UpstreamTimeout`). So no
  connection of a rollout outlives the collector's timeout.
- Without the header nothing changes; a value that is not a finite number is ignored.
"""

from __future__ import annotations

import math
import time
from contextvars import ContextVar

HEADER = "X-Rewardgym-Deadline"
_DEADLINE: ContextVar[float | None] = ContextVar("rewardgym_deadline", default=None)


def header_value(seconds_from_now: float) -> str:
    """The header's value for a deadline ``seconds_from_now`` from now."""
    return f"{time.time() + seconds_from_now:.3f}"


def enter(value: bytes | str | None) -> None:
    """Take the caller's deadline (a header value) for the running task and the tasks it starts."""
    if value is None:
        return
    try:
        deadline = float(value)
    except ValueError:
        return
    if math.isfinite(deadline):
        _DEADLINE.set(deadline)


def current() -> float | None:
    """The deadline in force (absolute Unix seconds), or None."""
    return _DEADLINE.get()


def remaining() -> float | None:
    """Seconds left before the deadline in force (may be <= 0), or None without one."""
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.time()
