"""Secret refusals through the real ``gym`` command: refused at start-up, never printed or written.

- ``${oc.env:…}`` values under a key that does not look secret are masked by ``gym config show`` (YAML and
  JSON), while a URL read from the environment is still shown;
- a model URL with ``user:password@`` is a one-line config error naming ``policy_base_url`` (for
  ``gym config show``, ``gym env start`` and ``gym eval run``), the password appears nowhere, and
  ``gym eval run`` writes no ``*_run.json``;
- a CR/LF in the API key (given through ``$REWARDGYM_MODEL_API_KEY``) or in the shared token is refused
  before any server starts or any request is sent.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

MCQA = REPO_ROOT / "src/rewardgym/environments/mcqa/data/example.jsonl"
VLLM = ["--resources-server", "mcqa", "--model-type", "vllm_model", "--model", "m"]
PASSWORD = "pw7c1e9a3bQZ"


def gym(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1", **env}
    return subprocess.run(
        [sys.executable, "-m", "rewardgym", *args], cwd=cwd, env=environ, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def test_environment_values_are_masked_by_config_show(tmp_path: Path) -> None:
    (tmp_path / "env.yaml").write_text(
        "policy_base_url: ${oc.env:RG_URL}\npolicy_model_name: m\npolicy_api_key: ''\n"
        "judge_setting: ${oc.env:RG_VALUE}\n"
    )
    env = {"RG_URL": "http://127.0.0.1:8000/v1", "RG_VALUE": "envvalue-5b1d4a8e"}
    for extra in ([], ["--json"]):
        shown = gym("config", "show", "--resources-server", "mcqa", "--model-type", "vllm_model", *extra,
                    cwd=tmp_path, **env)  # fmt: skip
        assert shown.returncode == 0, shown.stderr
        assert "envvalue" not in shown.stdout + shown.stderr
        assert "judge_setting" in shown.stdout and "http://127.0.0.1:8000/v1" in shown.stdout


@pytest.mark.parametrize("command", ["config show", "env start", "eval run"])
def test_a_model_url_with_credentials_is_refused(tmp_path: Path, command: str) -> None:
    extra = ["--input", str(MCQA), "-o", "out/rollouts.jsonl"] if command == "eval run" else []
    result = gym(*command.split(), *VLLM, "--model-url", f"http://alice:{PASSWORD}@127.0.0.1:9/v1",
                 *extra, cwd=tmp_path, REWARDGYM_MODEL_API_KEY="sk-unused-123")  # fmt: skip
    printed = result.stdout + result.stderr
    assert result.stderr.startswith("Error: "), printed
    assert result.returncode == 1 and "policy_base_url: the URL has credentials" in printed, printed
    assert "policy_api_key" in printed and PASSWORD not in printed and "alice" not in printed
    assert not list(tmp_path.rglob("*_run.json"))
    assert not any(PASSWORD.encode() in p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())


def test_a_crlf_in_the_key_or_the_token_is_refused_before_anything_starts(tmp_path: Path) -> None:
    started = gym("env", "start", *VLLM, "--model-url", "http://127.0.0.1:9/v1", "--log-dir", "logs",
                  cwd=tmp_path, REWARDGYM_MODEL_API_KEY="sk-abc123\r\nX-Evil: 1")  # fmt: skip
    assert started.returncode == 1, started.stdout + started.stderr
    assert "Error: policy_api_key: contains CR" in started.stderr and "X-Evil" not in started.stderr
    assert not (tmp_path / "logs").exists()  # no server was started
    run = gym("eval", "run", "--no-serve", "--head-url", "http://127.0.0.1:9", "--input", str(MCQA),
              "-o", "out/rollouts.jsonl", '++auth_token="tok-123456\\nX-Evil: 1"', cwd=tmp_path)  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Error: auth_token: contains LF" in run.stderr and "X-Evil" not in run.stdout + run.stderr
