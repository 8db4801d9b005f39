"""``gym curriculum serve`` as a real process on 127.0.0.1: the API over HTTP, the shared token, bounded
bodies, refused reports, and a restart (clean or after kill -9) that resumes."""

from __future__ import annotations

import signal
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.stubs.processes import GymProcess, free_port, poll

TOKEN = "curriculum-test-token"
pytestmark = pytest.mark.slow


def call(url: str, body: Any | None = None, token: str | None = TOKEN) -> tuple[int, Any]:
    data = None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
    request = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, orjson.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, orjson.loads(exc.read() or b"null")


def start(tmp_path: Path, port: int, token: str | None = TOKEN, policy: str = "uniform") -> GymProcess:
    rows = tmp_path / "rows.jsonl"
    if not rows.exists():
        rows.write_text("".join(f'{{"question": "q{i}"}}\n' for i in range(30)))
    gym = GymProcess(
        [
            "curriculum", "serve", "--input", str(rows), "--policy", policy, "--group-size", "4",
            "--state", str(tmp_path / "state.npz"), "--port", str(port), "--max-request-bytes", "4096",
            *([f"++auth_token={token}"] if token else []),
        ],
        cwd=tmp_path,
    )  # fmt: skip
    up = poll(lambda: not gym.running or answers(f"http://127.0.0.1:{port}/"), 60, 0.1)
    if not (up and gym.running):
        gym.kill()
        raise AssertionError(f"the service did not start:\n{gym.text}")
    return gym


def answers(url: str) -> bool:
    try:
        return call(url, token=None)[0] == 200
    except OSError:
        return False


def test_the_service_serves_reports_and_resumes(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    gym = start(tmp_path, port)
    try:
        assert call(f"{base}/next_batch", {"n": 3}, token=None)[0] == 401
        assert call(f"{base}/next_batch", {"n": 3}, token="wrong")[0] == 401
        status, batch = call(f"{base}/next_batch", {"n": 5})
        assert status == 200 and batch["step"] == 1 and batch["group_size"] == 4
        tasks = [row["_ng_task_index"] for row in batch["rows"]]
        assert all(row["question"] == f"q{t}" for row, t in zip(batch["rows"], tasks, strict=True))
        status, answer = call(f"{base}/report", {"task_index": tasks[0], "rewards": [1, 0, 0, 1]})
        assert (status, answer) == (200, {"informative": [True]})
        groups = [{"task_index": t, "rewards": [1.0] * 4} for t in tasks[1:3]]
        assert call(f"{base}/report", {"groups": groups}) == (200, {"informative": [False, False]})

        status, error = call(f"{base}/report", {"task_index": tasks[0], "rewards": [1, 1, 1, 1]})
        assert status == 400 and error["error"]["type"] == "DuplicateReport"
        assert f"task {tasks[0]} has no served group waiting" in error["error"]["message"]
        for body, kind in [
            ({"task_index": 999, "rewards": [1]}, "UnknownTask"),
            ({"task_index": tasks[3], "rewards": [2.0]}, "BadReward"),
            ({"task_index": tasks[3], "rewards": []}, "BadReward"),
            ({"groups": [{"task_index": tasks[3], "rewards": [1]}, {"task_index": 999, "rewards": [1]}]},
             "UnknownTask"),
        ]:  # fmt: skip
            status, error = call(f"{base}/report", body)
            assert (status, error["error"]["type"]) == (400, kind), body
        assert call(f"{base}/report", b'{"task_index": 3, "rewards": [NaN]}')[0] in (400, 422)
        assert call(f"{base}/report", {"task_index": tasks[3]})[0] == 400
        assert call(f"{base}/next_batch", {"n": 0})[0] == 422
        assert call(f"{base}/next_batch", b"x" * 5000)[0] == 413

        status, state = call(f"{base}/state?offset=0&limit=30")
        assert status == 200 and state["task_count"] == 30 and state["reports"] == 3
        assert state["tasks"]["served"][tasks[3]] == 1 and state["tasks"]["reported"][tasks[3]] == 0
        assert state["tasks"]["informative_rate"][tasks[0]] == 1.0
        assert call(f"{base}/state?limit=0")[0] == 400

        gym.signal(signal.SIGKILL)  # a crash: the last calls live only in the journal
        gym.finish()
        gym = start(tmp_path, port)
        status, state = call(f"{base}/state?limit=30")
        assert state["reports"] == 3 and state["step"] == 1
        assert call(f"{base}/report", {"task_index": tasks[3], "rewards": [0, 1, 0, 0]}) == (
            200,
            {"informative": [True]},
        )
        gym.signal(signal.SIGTERM)
        assert gym.finish() == 0
        assert not answers(f"{base}/")
        gym = start(tmp_path, port)
        assert call(f"{base}/state?limit=1")[1]["reports"] == 4
    finally:
        gym.kill()
