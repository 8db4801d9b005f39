"""One rule for the model flags in every command, and `gym config show` as the pre-flight check of
`gym env start` — each through a real `gym` process."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT

POLICY_FLAGS = ("--model-url", "http://127.0.0.1:9/v1", "--model", "m")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _gym(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "rewardgym", *args],
        capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd, env=env,
    )  # fmt: skip


def test_config_show_applies_the_embedded_default_like_env_start(tmp_path: Path) -> None:
    shown = _gym("config", "show", "--resources-server", "mcqa", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    data = yaml.safe_load(shown.stdout)
    assert list(data["policy_model"]["responses_api_models"]) == ["embedded_model"]
    agent = data["mcqa_simple_agent"]["responses_api_agents"]["simple_agent"]
    assert agent["model_server"]["name"] == "policy_model"


@pytest.mark.parametrize(
    "command",
    [
        ("config", "show"),
        ("env", "start"),
        ("eval", "run", "--input", "in.jsonl"),
    ],
    ids=["config-show", "env-start", "eval-run"],
)
def test_model_url_without_model_type_names_model_type(tmp_path: Path, command: tuple[str, ...]) -> None:
    (tmp_path / "in.jsonl").write_text('{"responses_create_params": {"input": "q"}}\n')
    result = _gym(*command, "--resources-server", "mcqa", *POLICY_FLAGS, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: ")
    assert "--model-type vllm_model" in result.stderr and "--model-type openai_model" in result.stderr
    assert "Starting" not in result.stdout  # refused before any server started


def test_model_type_with_flags_resolves_and_unset_policy_values_come_in_one_error(tmp_path: Path) -> None:
    ok = _gym(
        "config", "show", "--resources-server", "mcqa", "--model-type", "vllm_model", *POLICY_FLAGS,
        "--model-api-key", "k", cwd=tmp_path,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    model = yaml.safe_load(ok.stdout)["policy_model"]["responses_api_models"]["vllm_model"]
    assert (model["base_url"], model["model"], model["api_key"]) == ("http://127.0.0.1:9/v1", "m", "***")

    missing = _gym("config", "show", "--resources-server", "mcqa", "--model-type", "vllm_model", cwd=tmp_path)
    assert missing.returncode == 1
    err = missing.stderr
    assert err.startswith("Error: 3 interpolations cannot be resolved:")
    for key, flag in (
        ("policy_base_url", "--model-url"),
        ("policy_api_key", "--model-api-key"),
        ("policy_model_name", "--model"),
    ):
        assert f"key '{key}' is not set; set it, e.g. ++{key}=<value> (or {flag}, or in env.yaml)" in err


def test_config_show_rejects_unknown_server_fields_like_env_start(tmp_path: Path) -> None:
    bad = "++mcqa.resources_servers.mcqa.bogus_field=1"
    shown = _gym("config", "show", "--resources-server", "mcqa", bad, cwd=tmp_path)
    assert shown.returncode == 1
    assert "mcqa.bogus_field: unknown field" in shown.stderr
    assert shown.stdout == ""
    head = f"++head_server.port={_free_port()}"  # the machine may run another gym on the default port
    started = _gym("env", "start", "--resources-server", "mcqa", bad, head, "--log-dir", "logs", cwd=tmp_path)
    assert started.returncode == 1
    assert "mcqa.bogus_field: unknown field" in started.stderr + started.stdout


def test_reverify_needs_no_model(tmp_path: Path) -> None:
    """reverify starts the resources server only: no model flag, no embedded model."""
    data = REPO_ROOT / "src/rewardgym/environments/string_match/data/example_rollouts.jsonl"
    (tmp_path / "rollouts.jsonl").write_bytes(data.read_bytes())  # rows with agent_ref and keys
    result = _gym(
        "eval", "reverify", "--resources-server", "string_match", "--inputs", "rollouts.jsonl",
        "--rollouts", "rollouts.jsonl", "-o", "out/rescored.jsonl", "--log-dir", "logs", cwd=tmp_path,
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Starting 1 server (logs" in result.stdout and "Re-verified 5 rollouts (0 failed)" in result.stdout
    assert (tmp_path / "out" / "rescored.jsonl").read_bytes().count(b"\n") == 5
    logs = sorted(p.name for p in (tmp_path / "logs").glob("*.log") if not p.name.startswith("_"))
    assert logs == ["head_server.log", "string_match.log"]  # no model server


COMMANDS = [
    ("config", "show"), ("env", "start"), ("env", "status"), ("env", "stop"), ("env", "list"),
    ("eval", "run"), ("eval", "profile"), ("eval", "reverify"), ("eval", "aggregate"), ("model", "fetch"),
    ("eval", "compare"), ("eval", "health-check"), ("eval", "export"), ("eval", "analyze"),
    ("data", "select"), ("env", "new"),
]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_help_gives_every_option_a_text_and_a_plain_value_label(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    result = _gym(*command, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "<bool>" not in text and "list[" not in text and "<str>" not in text, text
    assert "<path>" not in text and "<parquet" not in text, text  # arguments and choices too
    # An option's own row starts "│ --name" (or "│ -m --name"); a wrapped help line may also hold "--x".
    rows = [line for line in text.splitlines() if re.match(r"│ [ *]{0,4}(?:-\w,? +)?--\w", line)]
    assert rows, text
    for row in rows:
        cells = row.strip("│ ").split()
        option = next(c for c in cells if c.startswith("--"))
        after = row.split(option, 1)[1].split()
        words = [w for w in after if w not in ("-m", "-i", "-o", "-a", "PATH", "TEXT", "INT", "FLOAT", "I/N")]
        words = [w for w in words if not w.startswith("[x") and w not in ("│",)]
        assert words, f"{' '.join(command)} {option} has no help text:\n{row}"
