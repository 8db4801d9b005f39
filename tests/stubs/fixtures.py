"""Shared fixtures: ``serve`` comes from the ``rewardgym`` pytest plugin
(:mod:`rewardgym.testing.pytest_plugin`); ``stub`` is its ``scripted_model`` under the name the repository's
tests use."""

from __future__ import annotations

import pytest

from rewardgym.launch.serve import ThreadedServer
from rewardgym.testing import OpenAIStub
from rewardgym.testing.pytest_plugin import serve

__all__ = ["serve", "stub"]


@pytest.fixture
def stub(scripted_model: tuple[ThreadedServer, OpenAIStub]) -> tuple[ThreadedServer, OpenAIStub]:
    """A fresh scripted upstream on a real port: (runner with .url, app with .state/.requests)."""
    return scripted_model
