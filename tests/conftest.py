"""Shared test fixtures: where the NeMo Gym reference data lives (inside the checkout, never outside it).

``tests/data/nemo_gym/`` holds NeMo Gym's example rows, recorded rollouts and 0.7.0 output files (origin and
licence in its ``NOTICE``). Tests read them from there only; a missing file fails the test that needs it.
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
NEMO_GYM_DATA = REPO_ROOT / "tests" / "data" / "nemo_gym"
EXAMPLES = NEMO_GYM_DATA / "nemo_gym_examples"
NG_OUTPUTS = NEMO_GYM_DATA / "nemo_gym_0.7.0_outputs"
