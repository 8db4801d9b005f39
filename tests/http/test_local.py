"""The in-process transport (:mod:`rewardgym.http.local`) through the real client.

Each app is hosted on a port of 127.0.0.1 where nothing listens: a reply at all proves the request never
touched a socket (over TCP it would be refused). A real resources server's app (gate, session cookie,
routes) answers exactly as it does over HTTP; small raw ASGI apps cover the edges (a hang, a reply too
large, an app failing before its reply, a streamed reply, the caller's context).
"""

from __future__ import annotations

import asyncio
import contextvars
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from rewardgym.http import deadline, local
from rewardgym.http.client import HttpClient
from rewardgym.http.config import HttpClientConfig
from rewardgym.http.errors import UpstreamConnectionError, UpstreamReplyTooLarge, UpstreamTimeout
from tests.stubs.environments import CounterServer

ONE_TRY = HttpClientConfig(max_attempts=1)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def port() -> Iterator[int]:
    chosen = _closed_port()
    yield chosen
    local.unhost("127.0.0.1", chosen)


async def test_a_real_server_app_keeps_its_session_in_process(port: int) -> None:
    server = CounterServer({"name": "counter", "host": "127.0.0.1", "port": port})
    local.host("127.0.0.1", port, server.build_app())
    base = f"http://127.0.0.1:{port}"
    async with HttpClient(ONE_TRY) as client:
        seeded = await client.post(f"{base}/seed_session", json={"initial_count": 3})
        assert seeded.status == 200 and seeded.cookies  # the gate set the session cookie
        await client.post(f"{base}/increment_counter", json={"count": 4}, cookies=seeded.cookies)
        value = await client.post(f"{base}/get_counter_value", json={}, cookies=seeded.cookies)
        assert value.json() == {"count": 7}
        fresh = await client.post(f"{base}/get_counter_value", json={})  # no cookie: a new session
        assert fresh.json() == {"count": 0}
        missing = await client.post(f"{base}/no_such_route", json={}, raise_for_status=False)
        assert missing.status == 404
    local.unhost("127.0.0.1", port)
    async with HttpClient(ONE_TRY) as client:  # unhosted: the same URL goes to the (closed) socket
        with pytest.raises(UpstreamConnectionError):
            await client.post(f"{base}/get_counter_value", json={})


async def test_scope_body_headers_and_query_reach_the_app(port: int) -> None:
    seen: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        message = await receive()
        seen.update(scope=scope, body=message["body"])
        await send({"type": "http.response.start", "status": 201, "headers": [
            (b"content-type", b"application/json"), (b"set-cookie", b"a=1; Path=/"),
            (b"set-cookie", b"b=2; Path=/"),
        ]})  # fmt: skip
        await send({"type": "http.response.body", "body": b'{"ok":', "more_body": True})
        await send({"type": "http.response.body", "body": b"true}"})

    local.host("127.0.0.1", port, app)
    async with HttpClient(ONE_TRY, headers={"X-Token": "t"}) as client:
        reply = await client.post(f"http://127.0.0.1:{port}/v1/x?y=1", json={"k": "v"}, cookies={"c": "3"})
    assert reply.status == 201 and reply.json() == {"ok": True}
    assert reply.cookies == {"a": "1", "b": "2"}
    scope = seen["scope"]
    assert (scope["method"], scope["path"], scope["query_string"]) == ("POST", "/v1/x", b"y=1")
    headers = dict(scope["headers"])
    assert headers[b"host"] == f"127.0.0.1:{port}".encode()
    assert headers[b"x-token"] == b"t" and headers[b"cookie"] == b"c=3"
    assert headers[b"content-length"] == str(len(seen["body"])).encode() and seen["body"] == b'{"k":"v"}'


async def test_the_caller_context_does_not_leak_either_way(port: int) -> None:
    probe: contextvars.ContextVar[str] = contextvars.ContextVar("probe", default="unset")
    seen: dict[str, Any] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        seen["probe"], seen["deadline"] = probe.get(), deadline.current()
        probe.set("server")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    local.host("127.0.0.1", port, app)
    probe.set("caller")
    async with HttpClient(ONE_TRY) as client:
        await client.post(f"http://127.0.0.1:{port}/", json={})
    assert seen == {"probe": "unset", "deadline": None}  # a fresh context, as in another process
    assert probe.get() == "caller"


async def test_a_hanging_app_times_out_and_is_cancelled(port: int) -> None:
    cancelled = asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    local.host("127.0.0.1", port, app)
    config = ONE_TRY.model_copy(update={"total_timeout_s": 0.2})
    async with HttpClient(config) as client:
        with pytest.raises(UpstreamTimeout):
            await client.post(f"http://127.0.0.1:{port}/", json={})
    await asyncio.wait_for(cancelled.wait(), timeout=30)


async def test_a_reply_past_the_limit_fails_at_once(port: int) -> None:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for _ in range(100):
            await send({"type": "http.response.body", "body": b"x" * 1024, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    local.host("127.0.0.1", port, app)
    config = ONE_TRY.model_copy(update={"max_reply_bytes": 4096})
    async with HttpClient(config) as client:
        with pytest.raises(UpstreamReplyTooLarge):
            await client.get(f"http://127.0.0.1:{port}/")


async def test_an_app_failing_before_its_reply_is_a_disconnect(port: int) -> None:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    local.host("127.0.0.1", port, app)
    async with HttpClient(ONE_TRY) as client:
        with pytest.raises(UpstreamConnectionError, match="without a complete reply"):
            await client.get(f"http://127.0.0.1:{port}/")


async def test_a_header_with_a_line_break_is_refused_before_the_app_sees_it(port: int) -> None:
    called = False

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        nonlocal called
        called = True

    local.host("127.0.0.1", port, app)
    async with HttpClient(HttpClientConfig(max_attempts=3)) as client:
        with pytest.raises(UpstreamConnectionError, match="X-Evil") as failure:
            await client.post(
                f"http://127.0.0.1:{port}/", json={}, headers={"X-Evil": "a\r\nSet-Cookie: x=1"}
            )
    assert failure.value.final and not called
