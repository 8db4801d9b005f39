"""What the process supervisor (:mod:`.supervisor`) is given and what it raises, and its one asyncio helper.

- :class:`SupervisorOptions`: where logs go, the head's address, the ready and stop deadlines, the upstreams
  to wait for, the head's token (never printed) and whether instances are forked from the fork server.
- :class:`ChildFailure`: a child server exited or never became ready; the message ends with its log tail.
- :func:`all_or_first_error`: run waits concurrently; the first failure cancels the others and is raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardgym.errors import ServerError


class ChildFailure(ServerError):
    """A child server exited or never became ready; the message ends with its last log lines."""

    def __init__(self, name: str, reason: str, tail: Sequence[str]) -> None:
        self.name = name
        self.tail = list(tail)
        lines = "\n".join(f"  | {line}" for line in tail) if tail else "  | (no output)"
        super().__init__(f"server {name!r} {reason}; last log lines:\n{lines}")


@dataclass
class SupervisorOptions:
    """How the supervisor runs."""

    log_dir: Path
    head_host: str = "127.0.0.1"
    head_port: int = 11000
    ready_timeout_s: float = 600.0
    upstreams: list[str] = field(default_factory=list)
    upstream_timeout_s: float = 120.0
    stop_grace_s: float = 5.0
    auth_token: str | None = field(default=None, repr=False)
    """The shared token the head registry requires (``++auth_token``); never printed."""
    network_bind: bool = False
    """Servers may listen on non-loopback addresses (placed on a Ray cluster, token required)."""
    host_colocated: bool = False
    """Serve the colocated instances (``colocate: true``) in this process rather than in one child
    (:class:`~rewardgym.launch.colocate.HostedHere`): a serving ``gym eval run`` does, ``gym env start``
    does not (its process stays the light, robust head)."""
    fork_server: bool = True
    """Fork the instances from one process that imported the server stack once (:mod:`.zygote`) instead of
    starting a fresh interpreter per instance (which stays the fallback)."""


async def all_or_first_error(waits: list[Coroutine[Any, Any, None]]) -> None:
    """Run ``waits`` concurrently; on the first failure cancel the others and raise it."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        done, _pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            failure = task.exception()
            if failure is not None:
                raise failure
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
