"""The fault-injecting upstream itself (a real process), seen through aiohttp as a model server sees it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import orjson
import pytest

from tests.stubs.fault_upstream import KINDS, FaultSettings, FaultUpstream, pick_fault, start_fault_upstream
from tests.stubs.processes import REPO_ROOT, gym_environ


@pytest.fixture(scope="module")
def upstream() -> Iterator[FaultUpstream]:
    with start_fault_upstream("--seed", "11", "--hang-s", "30") as running:
        yield running


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    timeout = aiohttp.ClientTimeout(total=5, sock_read=1.0)
    async with aiohttp.ClientSession(timeout=timeout) as client:
        yield client


def chat(text: str) -> bytes:
    return orjson.dumps({"model": "m", "messages": [{"role": "user", "content": text}]})


async def post(
    session: aiohttp.ClientSession, url: str, body: bytes, path: str = "/v1/chat/completions"
) -> tuple[int, dict[str, str], bytes]:
    async with session.post(url + path, data=body, headers={"Content-Type": "application/json"}) as reply:
        return reply.status, dict(reply.headers), await reply.read()


async def test_no_fault_answers_a_valid_completion_and_responses(
    upstream: FaultUpstream, session: aiohttp.ClientSession
) -> None:
    upstream.control(rates={}, reset_stats=True)
    status, _, body = await post(session, upstream.url, chat("hello"))
    assert status == 200
    answer = orjson.loads(body)
    assert answer["choices"][0]["message"]["content"] == "\\boxed{B}"
    status, _, body = await post(session, upstream.url, orjson.dumps({"input": "hi"}), "/v1/responses")
    assert status == 200 and orjson.loads(body)["output"][0]["type"] == "message"
    stats = upstream.stats()
    assert stats["requests"] == 2 and stats["ok"] == 2 and stats["faults"] == {}


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_status_faults(upstream: FaultUpstream, session: aiohttp.ClientSession, status: int) -> None:
    upstream.control(rates={str(status): 1.0}, reset_stats=True)
    got, headers, body = await post(session, upstream.url, chat(f"status {status}"))
    assert got == status
    assert "retry-after" not in {k.lower() for k in headers}
    assert orjson.loads(body)["error"]["code"] == status
    assert upstream.stats()["faults"] == {str(status): 1}


async def test_429_with_and_without_retry_after(
    upstream: FaultUpstream, session: aiohttp.ClientSession
) -> None:
    upstream.control(rates={"429": 1.0}, retry_after_s=0.3, max_faults_per_call=1, reset_stats=True)
    status, headers, _ = await post(session, upstream.url, chat("slow down"))
    assert status == 429 and headers["Retry-After"] == "0.3"
    status, _, _ = await post(session, upstream.url, chat("slow down"))  # at once: a Retry-After violation
    assert status == 200  # the second arrival of this call passes (max_faults_per_call=1)
    status, _, _ = await post(session, upstream.url, chat("patient"))
    assert status == 429
    await asyncio.sleep(0.35)  # honouring Retry-After is the behaviour under test, not synchronisation
    assert (await post(session, upstream.url, chat("patient")))[0] == 200
    retry_after = upstream.stats()["retry_after"]
    assert retry_after["checked"] == 2
    assert retry_after["violations"] == 1  # only the call that came back at once
    assert retry_after["min_margin_s"] < 0

    upstream.control(rates={"429_bare": 1.0}, max_faults_per_call=None, reset_stats=True)
    status, headers, _ = await post(session, upstream.url, chat("bare"))
    assert status == 429 and "Retry-After" not in headers


async def test_hang_is_ended_only_by_the_client_timeout(
    upstream: FaultUpstream, session: aiohttp.ClientSession
) -> None:
    upstream.control(rates={"hang": 1.0}, max_faults_per_call=None, reset_stats=True)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await post(session, upstream.url, chat("hang"))
    assert 0.9 < time.monotonic() - started < 4  # the client's 1 s read timeout, not an answer
    assert upstream.stats()["faults"] == {"hang": 1}


async def test_reset_cuts_the_connection_mid_body(
    upstream: FaultUpstream, session: aiohttp.ClientSession
) -> None:
    upstream.control(rates={"reset": 1.0}, reset_stats=True)
    async with session.post(upstream.url + "/v1/chat/completions", data=chat("reset")) as reply:
        assert reply.status == 200  # the status line and headers arrived …
        length = int(reply.headers["Content-Length"])
        with pytest.raises(aiohttp.ClientPayloadError):  # … the body did not
            await reply.read()
    assert length > 100


@pytest.mark.parametrize(("kind", "check"), [("malformed", "not_json"), ("missing", "no_choices")])
async def test_bad_bodies(
    upstream: FaultUpstream, session: aiohttp.ClientSession, kind: str, check: str
) -> None:
    upstream.control(rates={kind: 1.0}, reset_stats=True)
    status, _, body = await post(session, upstream.url, chat(kind))
    assert status == 200
    if check == "not_json":
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(body)
    else:
        answer = orjson.loads(body)
        assert "choices" not in answer and answer["object"] == "chat.completion"


async def test_directive_in_the_body_overrides_the_rates(
    upstream: FaultUpstream, session: aiohttp.ClientSession
) -> None:
    upstream.control(rates={}, reset_stats=True)
    statuses = [(await post(session, upstream.url, chat("q [[fault:503:2]]")))[0] for _ in range(3)]
    assert statuses == [503, 503, 200]
    always = [(await post(session, upstream.url, chat("q [[fault:500:0]]")))[0] for _ in range(3)]
    assert always == [500, 500, 500]
    stats = upstream.stats()
    assert stats["faults"] == {"500": 3, "503": 2}
    assert stats["attempts"] == {"3": 2}  # two calls, three arrivals each


async def test_rates_are_respected_and_deterministic(
    upstream: FaultUpstream, session: aiohttp.ClientSession
) -> None:
    rates = {"500": 0.2, "429": 0.05, "reset": 0.05, "malformed": 0.1}
    seen: list[list[Any]] = []
    for _ in range(2):
        upstream.control(rates=rates, seed=5, retry_after_s=0, reset_stats=True)
        for i in range(400):
            try:
                status = (await post(session, upstream.url, chat(f"row {i}")))[0]
            except aiohttp.ClientPayloadError:
                status = -1
            seen.append([i, status])
        stats = upstream.stats()
        assert stats["requests"] == 400
        for kind, rate in rates.items():
            assert abs(stats["faults"].get(kind, 0) / 400 - rate) < 0.06, (kind, stats["faults"])
    first, second = seen[:400], seen[400:]
    assert first == second  # same seed, same bodies → the same faults


def test_pick_fault_depends_on_seed_body_and_arrival_only() -> None:
    settings = FaultSettings(rates={"500": 0.5}, seed=1)
    a = [pick_fault(settings, bytes([i]) * 32, 0) for i in range(200)]
    assert a == [pick_fault(settings, bytes([i]) * 32, 0) for i in range(200)]
    assert 60 < a.count("500") < 140
    assert a != [
        pick_fault(FaultSettings(rates={"500": 0.5}, seed=2), bytes([i]) * 32, 0) for i in range(200)
    ]
    capped = FaultSettings(rates={"500": 1.0}, max_faults_per_call=2)
    assert [pick_fault(capped, b"x" * 32, n) for n in range(4)] == ["500", "500", None, None]


def test_control_and_cli_reject_bad_settings(upstream: FaultUpstream) -> None:
    for bad in ({"rates": {"501": 0.1}}, {"rates": {"500": 0.7, "hang": 0.5}}, {"colour": "red"}):
        with pytest.raises(Exception, match="400"):
            upstream.control(**bad)
    done = subprocess.run(
        [sys.executable, "-m", "tests.stubs.fault_upstream", "--p-500", "0.8", "--p-hang", "0.8"],
        cwd=REPO_ROOT, env=gym_environ(), capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "sum to 1.600 > 1" in done.stderr
    assert set(KINDS) >= {
        "500",
        "502",
        "503",
        "504",
        "429",
        "429_bare",
        "hang",
        "reset",
        "malformed",
        "missing",
    }
