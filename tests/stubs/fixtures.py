"""Shared fixtures: the stub upstream and in-process servers on real 127.0.0.1 ports."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rewardgym.launch.serve import ThreadedServer
from rewardgym.servers.base import BaseServer
from tests.stubs.openai_stub import OpenAIStub, StubState, start_stub


@pytest.fixture
def stub() -> Iterator[tuple[ThreadedServer, OpenAIStub]]:
    """A fresh stub upstream in a background thread: (runner with .url, app with .state/.requests)."""
    runner, app = start_stub(StubState())
    try:
        yield runner, app
    finally:
        app.released = True
        runner.stop()


@pytest.fixture
def serve() -> Iterator[Callable[[BaseServer[Any]], ThreadedServer]]:
    """Start servers in background threads on real ports; all are stopped after the test."""
    running: list[ThreadedServer] = []

    def start(server: BaseServer[Any]) -> ThreadedServer:
        runner = ThreadedServer(server).start()
        running.append(runner)
        return runner

    try:
        yield start
    finally:
        for runner in reversed(running):
            runner.stop()
