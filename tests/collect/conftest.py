"""Fixtures of the collection tests: a real stub agent over HTTP (see :mod:`tests.collect.agent_stub`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.collect.agent_stub import StubAgent


@pytest.fixture
async def agent() -> AsyncIterator[StubAgent]:
    stub = StubAgent()
    await stub.start()
    yield stub
    await stub.stop()
