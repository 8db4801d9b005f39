"""Fixtures of the code_gen tests: the isolation available on this machine and a fast config."""

from __future__ import annotations

import asyncio
import sys

import pytest

from rewardgym.environments.code_gen.isolation import Isolation, probe_isolation
from rewardgym.environments.code_gen.verifier import CodeGenConfig


@pytest.fixture(scope="session")
def isolation() -> Isolation:
    """What the sandbox can use here (probed once)."""
    return asyncio.run(probe_isolation(CodeGenConfig().unshare_command, sys.executable))


@pytest.fixture
def config(isolation: Isolation) -> CodeGenConfig:
    """A fast config; runs with the network only where no isolation exists (semantics tests only)."""
    return CodeGenConfig(
        unit_test_timeout_secs=2,
        max_concurrent_executions=2,
        require_network_isolation=isolation.mode != "none",
        sandbox_uid_base=65000 if isolation.mode != "none" else None,
    )
