"""Shared test fixtures: where the NeMo Gym reference files live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def _shared_root() -> Path:
    env = os.environ.get("REWARDGYM_SHARED")
    if env:
        return Path(env)
    return REPO_ROOT.parent / "shared"


SHARED = _shared_root()
REFERENCE = SHARED / "reference"
EXAMPLES = REFERENCE / "nemo_gym_examples"
NG_OUTPUTS = REFERENCE / "nemo_gym_0.7.0_outputs"


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    if not EXAMPLES.is_dir():
        pytest.fail(f"NeMo Gym reference examples not found at {EXAMPLES} (set REWARDGYM_SHARED)")
    return EXAMPLES
