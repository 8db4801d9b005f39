"""``gym env status`` while ``gym env start`` still waits for its upstream (issue 22, class 9): every
server answers, yet the stack is not ready — status says so and exits 1. Real processes; the upstream is a
port nobody listens on, so the start-up keeps waiting until it is stopped."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import orjson

from tests.servers.test_env_cli import CONFIG, Gym, free_port, gym_cli


def test_status_is_not_healthy_while_the_start_waits_for_its_upstream(tmp_path: Path) -> None:
    (tmp_path / "env.yaml").write_text(
        "policy_base_url: http://127.0.0.1:9/v1\npolicy_api_key: sk-status-test-1234\npolicy_model_name: m\n"
    )
    (tmp_path / "stack.yaml").write_text(CONFIG.format(rs_impl="mcqa"))
    head = free_port()
    gym = Gym(["--config", "stack.yaml", f"++head_server.port={head}"], tmp_path)
    url = f"http://127.0.0.1:{head}"
    try:
        report: dict[str, object] = {}
        deadline = (
            time.monotonic() + 120
        )  # a bound on a hang, not a synchronisation: the loop waits on a state
        while time.monotonic() < deadline and gym.proc.poll() is None:
            done = gym_cli("status", "--head-url", url, "--json")
            if done.stdout.startswith("{"):
                report = orjson.loads(done.stdout)
                if report["healthy"] == report["total"] == 3:
                    break
        assert report.get("healthy") == 3, (report, gym.text)
        assert done.returncode == 1  # every server answers, and still not ready
        assert report["waiting_for"] == ["http://127.0.0.1:9/v1"]
        shown = gym_cli("status", "--head-url", url)
        assert shown.returncode == 1 and "Still starting" in shown.stdout + shown.stderr
    finally:
        gym.proc.send_signal(signal.SIGTERM)
        gym.finish(60)
