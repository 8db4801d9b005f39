"""A resources server whose verify costs a fixed time, with a bounded concurrency per replica.

:class:`SlowVerifyServer` (``tests.stubs.slow_env:SlowVerifyServer``): ``/verify`` waits on a semaphore of
``verify_concurrency`` slots, then sleeps ``verify_delay_s`` — the workload of an expensive verifier
(code execution, a judge), so the throughput of one replica is ``verify_concurrency / verify_delay_s`` and
scaling over replicas is measurable on a small machine. Every answer is reward 1.0 and says which replica
served it (``served_by``: ``<host>:<pid>``), so tests can see how the load was spread and where.
"""

from __future__ import annotations

import asyncio
import os
import socket
from typing import ClassVar

from pydantic import Field

from rewardgym.protocol import ReverifyMode, VerifyRequest, VerifyResponse
from rewardgym.servers.config import ServerConfig
from rewardgym.servers.resources import ResourcesServer, ResourcesServerConfig


class SlowVerifyConfig(ResourcesServerConfig):
    """Config of the slow-verify environment."""

    verify_delay_s: float = Field(0.05, ge=0)
    """Seconds each verify takes."""

    verify_concurrency: int = Field(1, ge=1)
    """Verifies one replica runs at once; the others wait."""


class SlowVerifyResponse(VerifyResponse):
    served_by: str


class SlowVerifyServer(ResourcesServer[SlowVerifyConfig]):
    config_class: ClassVar[type[ServerConfig]] = SlowVerifyConfig
    verify_response_class = SlowVerifyResponse
    reverify_mode = ReverifyMode.STATELESS

    def __init__(self, config: object) -> None:
        super().__init__(config)  # type: ignore[arg-type]
        self._slots: asyncio.Semaphore | None = None
        self._identity = f"{socket.gethostname()}:{os.getpid()}"

    async def verify(self, body: VerifyRequest) -> VerifyResponse:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.config.verify_concurrency)
        async with self._slots:
            await asyncio.sleep(self.config.verify_delay_s)  # the verifier's cost, not a synchronisation
        return self.verify_response(body, reward=1.0, served_by=self._identity)
