"""Judge prompt building, verdict parsing, the two-order judge against a real HTTP stub, failure fields."""

from __future__ import annotations

import socket
from typing import Any

import aiohttp
import pytest

from rewardgym.environments.math_with_judge.judge import (
    FAILURE_JUDGE_ERROR,
    JUDGE_FAILED,
    JUDGE_SYSTEM_MESSAGE,
    JudgeError,
    build_judge_params,
    judge,
    judge_failure_fields,
    judge_user_message,
    parse_verdict,
)
from rewardgym.environments.math_with_judge.tests.judge_stub import http_post, judge_reply, running_stub
from rewardgym.protocol import Response, ResponseCreateParams, dump, keys

BASE = ResponseCreateParams.model_validate({"input": [], "model": "judge-model", "temperature": 0.0})


def _reply(data: dict[str, Any]) -> Response:
    return Response.model_validate(data)


@pytest.mark.parametrize(
    ("text", "equal"),
    [
        ("[[A=B]]", True),
        ("First [[A=B]], then [[A!=B]]", True),
        ("[[A!=B]] [[A=B]]", False),
        ("My final verdict is different [[A!=B]]", False),
        ("no label at all", False),
    ],
)
def test_parse_verdict_labels(text: str, equal: bool) -> None:
    assert parse_verdict(_reply(judge_reply(text))) is equal


def test_parse_verdict_malformed_replies_are_not_equal() -> None:
    assert parse_verdict(_reply(judge_reply("[[A=B]]", refusal=True))) is False
    empty = {**judge_reply(""), "output": []}
    assert parse_verdict(_reply(empty)) is False
    call_last = judge_reply("[[A=B]]")
    call_last["output"].append({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"})
    assert parse_verdict(_reply(call_last)) is False


def test_build_judge_params_replaces_input_and_keeps_the_rest() -> None:
    params = build_judge_params(BASE, "What is {x}?", "1/2", "0.5")
    data = dump(params)
    assert data["model"] == "judge-model"
    assert data["temperature"] == 0.0
    assert data["input"] == [
        {"type": "message", "role": "system", "content": JUDGE_SYSTEM_MESSAGE},
        {
            "type": "message",
            "role": "user",
            "content": "<|Problem|>\nWhat is {x}?\n\n<|Start of Assistant A's Answer|>\n1/2\n"
            "<|End of Assistant A's Answer|>\n\n<|Start of Assistant B's Answer|>\n0.5\n"
            "<|End of Assistant B's Answer|>",
        },
    ]
    assert BASE.input == []


async def test_judge_equal_twice_scores_one() -> None:
    async with running_stub() as stub, aiohttp.ClientSession() as session:
        stub.replies += [(200, judge_reply("[[A=B]]")), (200, judge_reply("[[A=B]]"))]
        reward, evaluations = await judge(BASE, "Q", "1/2", "0.5", http_post(session, stub.url))
        assert (reward, len(evaluations)) == (1.0, 2)
        assert [r["input"][1]["content"] for r in stub.requests] == [
            judge_user_message("Q", "1/2", "0.5"),
            judge_user_message("Q", "0.5", "1/2"),
        ]


async def test_judge_equal_then_different_scores_zero_with_two_evaluations() -> None:
    async with running_stub() as stub, aiohttp.ClientSession() as session:
        stub.replies += [(200, judge_reply("[[A=B]]")), (200, judge_reply("[[A!=B]]"))]
        reward, evaluations = await judge(BASE, "Q", "20", "20.0", http_post(session, stub.url))
        assert (reward, len(evaluations)) == (0.0, 2)


async def test_unparseable_verdict_is_not_equal_not_a_failure() -> None:
    async with running_stub() as stub, aiohttp.ClientSession() as session:
        stub.replies.append((200, judge_reply("I cannot decide.")))
        reward, evaluations = await judge(BASE, "Q", "1", "2", http_post(session, stub.url))
        assert (reward, len(evaluations)) == (0.0, 1)


async def test_http_error_becomes_judge_error_and_failure_fields() -> None:
    async with running_stub() as stub, aiohttp.ClientSession() as session:
        stub.replies.append((401, {"error": "bad key"}))
        with pytest.raises(JudgeError, match="ClientResponseError: 401") as caught:
            await judge(BASE, "Q", "1", "2", http_post(session, stub.url))
    fields = judge_failure_fields(caught.value)
    assert fields[keys.REWARD] == 0.0
    assert fields[keys.FAILURE_CLASS] == JUDGE_FAILED == "judge_failed"
    assert fields[FAILURE_JUDGE_ERROR].startswith("JudgeError: ClientResponseError: 401")


async def test_unreachable_judge_is_a_judge_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with aiohttp.ClientSession() as session:
        with pytest.raises(JudgeError, match="ClientConnectorError"):
            await judge(BASE, "Q", "1", "2", http_post(session, f"http://127.0.0.1:{port}/v1/responses"))


def test_failure_fields_redact_credentials() -> None:
    fields = judge_failure_fields(JudgeError("upstream said: Authorization: Bearer sk-abcdefghijklmnop1234"))
    assert "sk-abcdefghijklmnop1234" not in fields[FAILURE_JUDGE_ERROR]
