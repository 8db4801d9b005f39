"""``drop_input_reasoning_items`` of the built-in openai_model config is a boolean, from the environment or
not (NeMo Gym's ``${oc.env:POLICY_DROP_REASONING_ITEMS,false}`` alone resolves to the string ``'False'``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.conftest import REPO_ROOT


@pytest.mark.parametrize(("env", "expected"), [(None, False), ("true", True), ("false", False)])
def test_drop_input_reasoning_items_is_a_boolean(tmp_path: Path, env: str | None, expected: bool) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "POLICY_DROP_REASONING_ITEMS"}
    if env is not None:
        environ["POLICY_DROP_REASONING_ITEMS"] = env
    run = subprocess.run(
        [sys.executable, "-m", "rewardgym", "config", "show", "--json", "--model-type", "openai_model",
         "-m", "x", "--model-url", "http://127.0.0.1:1/v1", "++policy_api_key=abcdefgh"],
        cwd=tmp_path, env={**environ, "PYTHONPATH": str(REPO_ROOT)}, capture_output=True, text=True,
        check=False, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    config = orjson.loads(run.stdout)
    value = config["policy_model"]["responses_api_models"]["openai_model"]["drop_input_reasoning_items"]
    assert value is expected
