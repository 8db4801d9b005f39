"""Model-call capture in the model servers (NeMo Gym 0.7.0's observability), over real HTTP: vllm_model
(chat upstream) and openai_model (Responses upstream, with an API key) in front of the scripted stub; calls
on ``/ng-rollout/<id>/v1/responses`` and ``/v1/chat/completions``, streamed and not, answered and failed,
each give one line of ``<dir>/<id>.capture.jsonl``; calls without the prefix give none; a write that fails
leaves the ``.capture.incomplete`` marker and the call still succeeds; no line holds the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from rewardgym.errors import ConfigError
from rewardgym.models.openai_model import OpenAIModel
from rewardgym.models.vllm_model import VLLMModel

KEY = "sk-capture-SECRET-7777"
ASK = {"model": "m", "input": "Which letter?"}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "Which letter?"}]}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _vllm(url: str, folder: Path) -> VLLMModel:
    return VLLMModel(
        {
            "name": "policy_model", "base_url": f"{url}/v1", "api_key": KEY, "model": "served",
            "http": {"max_attempts": 1, "read_timeout_s": 5.0},
            "observability_enabled": True, "model_call_capture_dir": str(folder),
        }
    )  # fmt: skip


def test_both_transports_streamed_or_not_are_captured(serve: Any, stub: Any, tmp_path: Path) -> None:
    runner, app = stub
    folder = tmp_path / "calls"
    model = serve(_vllm(runner.url, folder))
    with httpx.Client(base_url=model.url, timeout=20) as client:
        assert client.post("/v1/responses", json=ASK).status_code == 200  # no prefix: not captured
        assert not folder.exists() or not list(folder.iterdir())
        base = "/ng-rollout/3-1/v1"
        assert client.post(f"{base}/responses", json=ASK).status_code == 200
        assert client.post(f"{base}/responses", json={**ASK, "stream": True}).status_code == 200
        assert client.post(f"{base}/chat/completions", json=CHAT).status_code == 200
        chat_stream = {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
        assert client.post(f"{base}/chat/completions", json=chat_stream).status_code == 200
        app.state.mode = "status"
        app.state.fail_status = 400
        failed = client.post(f"{base}/responses", json=ASK)
        assert failed.status_code >= 400
        assert client.post("/ng-rollout/..bad/v1/responses", json=ASK).status_code >= 400  # not an id
    lines = _lines(folder / "3-1.capture.jsonl")
    assert [line["dialect"] for line in lines] == ["responses", "responses", "chat", "chat", "responses"]
    assert [line["status_code"] for line in lines] == [200, 200, 200, 200, failed.status_code]
    assert [line["error_category"] for line in lines][:4] == [None] * 4
    assert lines[4]["error_category"] in ("client_error", "upstream_error") and lines[4]["response"] is None
    for line in lines[:4]:
        assert line["model_ref"] == {"type": "responses_api_models", "name": "policy_model"}
        assert isinstance(line["request"], dict) and isinstance(line["response"], dict)
        assert line["completed_at"] >= line["started_at"] and line["latency_ms"] >= 0
    assert lines[1]["response"]["status"] == "completed"  # rebuilt from the stream's last event
    assert lines[3]["response"]["choices"][0]["message"]["content"] == "\\boxed{B}"  # rebuilt from chunks
    assert lines[3]["response"]["usage"] == lines[2]["response"]["usage"]
    assert len({line["model_call_id"] for line in lines}) == 5
    for path in folder.iterdir():
        assert KEY.encode() not in path.read_bytes() and b"Bearer" not in path.read_bytes()


def test_openai_model_capture_holds_no_key(serve: Any, stub: Any, tmp_path: Path) -> None:
    runner, app = stub
    folder = tmp_path / "calls"
    model = serve(
        OpenAIModel(
            {
                "name": "policy_model", "openai_base_url": f"{runner.url}/v1", "openai_api_key": KEY,
                "openai_model": "gpt", "observability_enabled": True, "model_call_capture_dir": str(folder),
            }
        )
    )  # fmt: skip
    with httpx.Client(base_url=model.url, timeout=20) as client:
        assert client.post("/ng-rollout/0-0/v1/responses", json=ASK).status_code == 200
        assert client.post("/ng-rollout/0-0/v1/chat/completions", json=CHAT).status_code == 200
    assert any(KEY in str(request) for request in app.requests)  # the key did go upstream
    (first, second) = _lines(folder / "0-0.capture.jsonl")
    assert first["response"]["output"] and second["response"]["choices"]
    assert KEY.encode() not in (folder / "0-0.capture.jsonl").read_bytes()


def test_a_failed_write_leaves_the_marker_and_the_call_succeeds(
    serve: Any, stub: Any, tmp_path: Path
) -> None:
    runner, _app = stub
    folder = tmp_path / "calls"
    folder.mkdir()
    (folder / "0-0.capture.jsonl").mkdir()  # the capture file cannot be opened for writing
    model = serve(_vllm(runner.url, folder))
    with httpx.Client(base_url=model.url, timeout=20) as client:
        assert client.post("/ng-rollout/0-0/v1/responses", json=ASK).status_code == 200
    assert (folder / "0-0.capture.incomplete").exists()


def test_capture_dir_must_be_absolute_when_enabled(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"model_call_capture_dir: .*absolute directory"):
        VLLMModel(
            {"name": "m", "base_url": "http://127.0.0.1:1/v1", "model": "x", "observability_enabled": True}
        )
    with pytest.raises(ConfigError, match="model_call_capture_dir"):
        _vllm("http://127.0.0.1:1", Path("relative"))
