"""pytest fixtures of the test kit, registered as the ``rewardgym`` pytest plugin (an entry point, so any
project that installs rewardgym has them; no ``conftest.py`` or ``sys.path`` edits needed).

- ``serve``: ``serve(server) -> ThreadedServer`` runs a server object (an environment, agent or model server,
  or any ASGI app) on a real 127.0.0.1 port in a background thread; every server started is stopped after the
  test.
- ``scripted_model``: a fresh :class:`~rewardgym.testing.scripted_model.OpenAIStub` on a real port, as
  ``(runner, stub)``: ``runner.url`` is the upstream URL, ``stub.state`` scripts the answers and
  ``stub.requests`` records what was asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rewardgym.launch.serve import ThreadedServer
from rewardgym.testing.scripted_model import OpenAIStub, StubState, start_stub


@pytest.fixture
def serve() -> Iterator[Callable[[Any], ThreadedServer]]:
    """Start servers in background threads on real ports; all are stopped after the test."""
    running: list[ThreadedServer] = []

    def start(server: Any) -> ThreadedServer:
        runner = ThreadedServer(server).start()
        running.append(runner)
        return runner

    try:
        yield start
    finally:
        for runner in reversed(running):
            runner.stop()


@pytest.fixture
def scripted_model() -> Iterator[tuple[ThreadedServer, OpenAIStub]]:
    """A scripted OpenAI-compatible upstream on a real port: ``(runner, stub)``."""
    runner, app = start_stub(StubState())
    try:
        yield runner, app
    finally:
        app.released = True
        runner.stop()
