"""The documented quick start with a chat upstream, as real processes:

``gym env start --resources-server mcqa --model-type vllm_model --model M --model-url U --model-api-key K``
with the stub upstream at ``U`` (it answers ``\\boxed{B}``), then an mcqa row through the agent's ``/run``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from tests.conftest import EXAMPLES, REPO_ROOT
from tests.servers.test_env_cli import Gym, free_port, instances, pids_gone
from tests.stubs.client import call

API_KEY = "sk-quickstart-key-1357911"


def test_vllm_model_quick_start(stub: Any, tmp_path: Path) -> None:
    runner, app = stub
    head = free_port()
    logs = tmp_path / "logs"
    gym = Gym(
        [
            "--resources-server", "mcqa", "--model-type", "vllm_model", "--model", "served-model",
            "--model-url", f"{runner.url}/v1", "--model-api-key", API_KEY, "--log-dir", str(logs),
            f"++head_server.port={head}",
        ],
        REPO_ROOT,
    )  # fmt: skip
    try:
        assert gym.wait_for("All 3 servers ready", timeout=120), gym.text
        table = {row["name"]: row for row in instances(head)}
        assert table["policy_model"]["implementation"] == "vllm_model"
        row = orjson.loads((EXAMPLES / "mcqa" / "example.jsonl").read_text().splitlines()[0])
        result = call(table["mcqa_simple_agent"]["url"], "POST", "/run", json=row)
        assert result.status == 200, result.body
        body = result.json()
        assert body["extracted_answer"] == "B"
        assert body["reward"] == (1.0 if row["expected_answer"] == "B" else 0.0)
        assert body["response"]["model"] == "served-model"
        assert body["response"]["usage"]["total_tokens"] > 0
        [sent] = [r for r in app.requests if r["path"] == "/v1/chat/completions"]
        assert sent["json"]["model"] == "served-model"
        assert sent["headers"]["authorization"] == f"Bearer {API_KEY}"
        for log in logs.glob("*.log"):
            assert API_KEY not in log.read_text(), log
        gym.proc.terminate()  # graceful stop, as Ctrl-C
        assert gym.finish() == 0
        assert pids_gone([row["pid"] for row in table.values()])
        assert API_KEY not in gym.text
    finally:
        if gym.proc.poll() is None:
            gym.proc.kill()
            gym.proc.wait()
