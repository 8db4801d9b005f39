"""Fixtures of the code_gen tests: the isolation available on this machine and a fast config, plus the HTTP
fixtures of the repository's ``tests/stubs`` (``serve``: servers on real 127.0.0.1 ports; ``stub``: the stub
model). ``tests/stubs`` is outside mypy's checked tree, so it is imported dynamically; the repository root is
put on ``sys.path`` when pytest was started without it."""

from __future__ import annotations

import asyncio
import importlib
import sys
from pathlib import Path

import pytest

from rewardgym.environments.code_gen.isolation import Isolation, probe_isolation
from rewardgym.environments.code_gen.tests.helpers import worker_uid_base
from rewardgym.environments.code_gen.verifier import CodeGenConfig

_REPO = Path(__file__).resolve().parents[5]
if (_REPO / "tests" / "stubs").is_dir() and str(_REPO) not in sys.path:
    sys.path.append(str(_REPO))

_fixtures = importlib.import_module("tests.stubs.fixtures")
serve = _fixtures.serve
stub = _fixtures.stub


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
        sandbox_uid_base=worker_uid_base(65000) if isolation.mode != "none" else None,
    )
