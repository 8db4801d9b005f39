"""rewardgym.env: one import for authors; each type written once (inferred from annotations); the test kit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import rewardgym.env as env_api
from rewardgym.env import (
    ResourcesServer,
    ResourcesServerConfig,
    SeedSessionRequest,
    VerifyRequest,
    VerifyResponse,
    environment,
    output_text,
)
from rewardgym.registry import lookup, unregister
from rewardgym.testing import (
    ReplayMismatch,
    ThreadedServer,
    match_recorded,
    read_jsonl,
    replay_recorded_rollouts,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "src/rewardgym/environments/mcqa/data"


class Config(ResourcesServerConfig):
    case_sensitive: bool = False
    """Compare answers with case."""


class Row(VerifyRequest):
    expected_answer: str


class Result(VerifyResponse):
    expected_answer: str
    extracted_answer: str | None = None


class Seed(SeedSessionRequest):
    start: int = 0


@environment("facade_exact")
class Exact(ResourcesServer[Config]):
    async def seed_session(self, body: Seed) -> None:
        return None

    async def verify(self, body: Row) -> Result:
        answer = output_text(body.response).strip()
        same = answer == body.expected_answer if self.config.case_sensitive else answer.lower() == "b"
        return Result.of(body, reward=float(same), extracted_answer=answer)


def test_every_type_is_inferred_once() -> None:
    assert Exact.config_class is Config
    assert Exact.verify_request_class is Row
    assert Exact.verify_response_class is Result
    assert Exact.seed_session_request_class is Seed
    assert lookup("resources_servers", "facade_exact") is Exact


def test_an_explicit_class_attribute_wins_and_a_broader_override_keeps_the_parent() -> None:
    class Explicit(ResourcesServer[Config]):
        verify_response_class = VerifyResponse

        async def verify(self, body: Row) -> Result:
            raise NotImplementedError

    assert Explicit.verify_response_class is VerifyResponse
    assert Explicit.verify_request_class is Row

    class Broader(Exact):
        async def verify(self, body: Row) -> VerifyResponse:  # type: ignore[override]
            return await super().verify(body)

    assert Broader.verify_response_class is Result


def test_wrong_annotations_are_refused_at_class_definition() -> None:
    with pytest.raises(TypeError, match=r"Bad\.verify: its return value must be a VerifyResponse subclass"):

        class Bad(ResourcesServer[Config]):
            async def verify(self, body: Row) -> Config:  # type: ignore[override]
                raise NotImplementedError

    with pytest.raises(TypeError, match="decorates a ResourcesServer subclass"):
        environment("not_a_server")(Config)  # type: ignore[type-var]
    unregister("resources_servers", "not_a_server")


def test_the_facade_exports_what_it_lists() -> None:
    for name in env_api.__all__:
        assert hasattr(env_api, name), name


def _rollout(row: dict[str, Any], text: str, reward: float) -> dict[str, Any]:
    response = {"id": "r", "created_at": 0.0, "model": "m", "output": [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
    ]}  # fmt: skip
    return row | {"response": response, "reward": reward, "extracted_answer": text, "_ng_task_index": 0}


def test_replay_reports_every_mismatch_and_honours_known_differences() -> None:
    rows = [
        {"responses_create_params": {"input": [{"role": "user", "content": q}]}, "expected_answer": "B"}
        for q in ("first?", "second?")
    ]
    recorded = match_recorded(rows, [_rollout(rows[1], "b", 1.0), _rollout(rows[0], "A", 1.0)])
    assert [r.index for r in recorded] == [0, 1]
    with ThreadedServer(Exact({"name": "facade_exact"})) as server:
        mismatch = r"(?s)1 replay mismatch.*row 0: reward = 0\.0, recorded 1\.0"
        with pytest.raises(ReplayMismatch, match=mismatch):
            replay_recorded_rollouts(server.url, recorded)
        outcomes = replay_recorded_rollouts(server.url, recorded, known_differences={0: {"reward": 0.0}})
    assert [o.answer["reward"] for o in outcomes] == [0.0, 1.0]


def test_match_recorded_never_guesses() -> None:
    rows = read_jsonl(EXAMPLES / "example.jsonl")
    with pytest.raises(ValueError, match="same match key"):
        match_recorded(rows, [], key=lambda row: "same")
    with pytest.raises(ValueError, match="recorded rollout 0 matches no row"):
        match_recorded(rows, [{"responses_create_params": {"input": "nowhere"}}])
