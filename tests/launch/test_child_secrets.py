"""A child server masks every secret its supervisor knows, not only those of its own config.

The supervisor's registered secrets (e.g. a value read from the environment under a key that does not
look secret) travel in the child spec, on the child's stdin like the rest of the spec, and never in its
``repr``. A real ``python -m rewardgym.launch.child`` process failing on a message that contains such a
value prints it masked.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rewardgym.config import config_from_dict, register_secret
from rewardgym.launch.child_spec import ChildSpec
from rewardgym.launch.from_config import child_specs
from tests.conftest import REPO_ROOT

SECRET = "childsecret-3b5a0f4d2b8f"


def test_child_specs_carry_the_registered_secrets(tmp_path: Path) -> None:
    register_secret(SECRET)
    cfg = config_from_dict({"env": {"resources_servers": {"tests.stubs.environments:ExactMatchServer": {}}}})
    (spec,) = child_specs(cfg, log_dir=tmp_path)
    assert SECRET in spec.secrets
    assert SECRET not in repr(spec) and SECRET not in str(spec)
    assert ChildSpec.model_validate_json(spec.model_dump_json()).secrets == spec.secrets


def test_a_child_masks_the_supervisors_secrets() -> None:
    spec = ChildSpec(
        name="env",
        kind="resources_servers",
        implementation=f"no_such_module_{SECRET.replace('-', '_')}:Server",
        config={"name": "env"},
        secrets=[SECRET.replace("-", "_")],
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    child = subprocess.run(
        [sys.executable, "-m", "rewardgym.launch.child"], input=spec.model_dump_json(), env=env,
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert child.returncode == 1 and child.stderr.startswith("Error: env: "), child.stderr
    assert "no_such_module_***" in child.stderr and "3b5a0f4d2b8f" not in child.stderr, child.stderr
