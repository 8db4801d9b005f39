"""The head registry served inside a launcher's own event loop (the local supervisor and the Ray one).

Contract of :class:`EmbeddedHead`:
- :meth:`start` serves a :class:`~rewardgym.launch.registry_server.HeadServer` (instance records, the
  resolved config document, the upstreams still awaited) on the options' head address, waits until it
  listens (10 s, else :class:`~rewardgym.errors.ServerError`), then writes this user's private identity
  record of the stack (:mod:`.head_identity`: what ``gym env stop`` checks the head and the pid against).
- :meth:`forget` removes that record (first thing of a stop); :meth:`stop` ends the server (5 s bound).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rewardgym.errors import ServerError
from rewardgym.launch.child_spec import ChildSpec, InstanceRecord
from rewardgym.launch.head_identity import new_stack_secret, remove_record, write_record
from rewardgym.launch.supervisor_options import SupervisorOptions

if TYPE_CHECKING:
    import uvicorn

__all__ = ["EmbeddedHead"]

_POLL_S = 0.02


class EmbeddedHead:
    """See the module docstring."""

    def __init__(self, options: SupervisorOptions) -> None:
        self.options = options
        self.url = f"http://{options.head_host}:{options.head_port}"
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._record: Path | None = None

    async def start(
        self,
        records: Callable[[], list[InstanceRecord]],
        specs: Sequence[ChildSpec],
        waiting_for: Callable[[], list[str]],
    ) -> None:
        from rewardgym.launch.colocate import embedded_uvicorn
        from rewardgym.launch.config_document import config_document
        from rewardgym.launch.registry_server import HeadServer
        from rewardgym.launch.serve import uvicorn_config

        options = self.options
        config = {
            "name": "head_server",
            "host": options.head_host,
            "port": options.head_port,
            "log_dir": options.log_dir,
            "auth_token": options.auth_token,
        }
        stack_secret = new_stack_secret()
        head = HeadServer(
            config,
            instances=records,
            config_document=lambda: config_document(
                list(specs), head_host=options.head_host, head_port=options.head_port
            ),
            stack_secret=stack_secret,
            waiting_for=waiting_for,
        )
        self._server = embedded_uvicorn(uvicorn_config(head))
        self._task = asyncio.create_task(self._server.serve())
        deadline = time.monotonic() + 10.0
        while not self._server.started:
            if self._task.done() or time.monotonic() > deadline:
                raise ServerError(f"the head server could not start on {self.url}")
            await asyncio.sleep(_POLL_S)
        self._record = write_record(self.url, stack_secret)

    def forget(self) -> None:
        remove_record(self._record)
        self._record = None

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, timeout=5.0)
            self._server = None
