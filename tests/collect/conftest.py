"""Fixtures of the collection tests: a real stub agent over HTTP (see :mod:`tests.collect.agent_stub`) and a
real stub OpenAI upstream that always answers ``\\boxed{B}``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from rewardgym.launch.serve import ThreadedServer
from tests.collect.agent_stub import StubAgent
from tests.stubs.openai_stub import StubState, start_stub


@pytest.fixture
async def agent() -> AsyncIterator[StubAgent]:
    stub = StubAgent()
    await stub.start()
    yield stub
    await stub.stop()


@pytest.fixture
def upstream() -> Iterator[ThreadedServer]:
    runner, app = start_stub(StubState(text="\\boxed{B}"))
    try:
        yield runner
    finally:
        app.released = True
        runner.stop()
