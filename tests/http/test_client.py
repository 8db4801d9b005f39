"""The pooled HTTP client against a real stub upstream: retries, backoff, Retry-After, cookies, errors.

Every network test runs over both transports (the lean HTTP/1.1 one and aiohttp): they must agree.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest

from rewardgym.http.client import HttpClient, parse_set_cookies
from rewardgym.http.config import HttpClientConfig
from rewardgym.http.errors import (
    UpstreamConnectionError,
    UpstreamHTTPError,
    UpstreamProtocolError,
    UpstreamTimeout,
)

BASE = HttpClientConfig(max_attempts=3, backoff_base_s=0.01, backoff_max_s=0.05, read_timeout_s=2.0)
BODY = {"input": "hi"}


@pytest.fixture(params=[True, False], ids=["h1", "aiohttp"])
def fast(request: pytest.FixtureRequest) -> HttpClientConfig:
    """The test client configuration, once per transport."""
    return BASE.model_copy(update={"fast_http": request.param})


def responses_url(runner: Any) -> str:
    return f"{runner.url}/v1/responses"


async def test_retries_503_then_succeeds(stub: Any, fast: HttpClientConfig) -> None:
    runner, app = stub
    app.state.fail_times, app.state.fail_status = 2, 503
    async with HttpClient(fast) as client:
        reply = await client.post(responses_url(runner), json=BODY)
    assert reply.status == 200
    assert reply.json()["object"] == "response"
    assert len(app.requests) == 3


@pytest.mark.parametrize("status", [400, 401, 404, 422, 500])
async def test_other_statuses_are_not_retried(stub: Any, status: int, fast: HttpClientConfig) -> None:
    runner, app = stub
    app.state.mode, app.state.fail_status = "status", status
    async with HttpClient(fast) as client:
        with pytest.raises(UpstreamHTTPError) as info:
            await client.post(responses_url(runner), json=BODY)
    assert info.value.status == status
    assert len(app.requests) == 1


async def test_500_is_retried_when_configured(stub: Any, fast: HttpClientConfig) -> None:
    runner, app = stub
    app.state.fail_times, app.state.fail_status = 1, 500
    config = fast.model_copy(update={"retry_statuses": [429, 500, 502, 503, 504]})
    async with HttpClient(config) as client:
        reply = await client.post(responses_url(runner), json=BODY)
    assert reply.status == 200
    assert len(app.requests) == 2


async def test_attempts_are_bounded(stub: Any, fast: HttpClientConfig) -> None:
    runner, app = stub
    app.state.mode, app.state.fail_status = "status", 503
    async with HttpClient(fast) as client:
        with pytest.raises(UpstreamHTTPError) as info:
            await client.post(responses_url(runner), json=BODY)
    assert info.value.status == 503
    assert len(app.requests) == fast.max_attempts


async def test_429_honours_retry_after(stub: Any, fast: HttpClientConfig) -> None:
    runner, app = stub
    app.state.fail_times, app.state.fail_status, app.state.retry_after = 1, 429, "0.4"
    async with HttpClient(fast) as client:
        started = time.monotonic()
        reply = await client.post(responses_url(runner), json=BODY)
        elapsed = time.monotonic() - started
    assert reply.status == 200
    assert elapsed >= 0.4  # the backoff alone would be ≤ 0.01 s
    assert len(app.requests) == 2


async def test_retry_after_is_capped(stub: Any, fast: HttpClientConfig) -> None:
    runner, app = stub
    app.state.fail_times, app.state.fail_status, app.state.retry_after = 1, 429, "3600"
    config = fast.model_copy(update={"retry_after_max_s": 0.1})
    async with HttpClient(config) as client:
        started = time.monotonic()
        await client.post(responses_url(runner), json=BODY)
    assert time.monotonic() - started < 2


async def test_connection_refused_is_retried_then_raised(fast: HttpClientConfig) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with HttpClient(fast) as client:
        started = time.monotonic()
        with pytest.raises(UpstreamConnectionError) as info:
            await client.post(f"http://127.0.0.1:{port}/x", json=BODY)
    assert f"127.0.0.1:{port}" in str(info.value)
    assert time.monotonic() - started < 2


async def test_read_timeout(stub: Any, fast: HttpClientConfig) -> None:
    runner, app = stub
    app.state.mode = "hang"
    config = fast.model_copy(update={"read_timeout_s": 0.2, "max_attempts": 2})
    async with HttpClient(config) as client:
        with pytest.raises(UpstreamTimeout):
            await client.post(responses_url(runner), json=BODY)
    assert len(app.requests) == 2


async def test_timeout_not_retried_when_disabled(stub: Any, fast: HttpClientConfig) -> None:
    runner, app = stub
    app.state.mode = "hang"
    config = fast.model_copy(update={"read_timeout_s": 0.2, "retry_on_timeout": False})
    async with HttpClient(config) as client:
        with pytest.raises(UpstreamTimeout):
            await client.post(responses_url(runner), json=BODY)
    assert len(app.requests) == 1


async def test_garbage_body_is_a_protocol_error(stub: Any, fast: HttpClientConfig) -> None:
    runner, app = stub
    app.state.mode = "garbage"
    async with HttpClient(fast) as client:
        reply = await client.post(responses_url(runner), json=BODY)
        with pytest.raises(UpstreamProtocolError):
            reply.json()


async def test_cookies_are_explicit_and_never_stored(stub: Any, fast: HttpClientConfig) -> None:
    runner, app = stub
    async with HttpClient(fast) as client:
        await client.post(responses_url(runner), json=BODY, cookies={"a": "1", "B___x": "v=="})
        await client.post(responses_url(runner), json=BODY)
    first, second = app.requests[0]["headers"], app.requests[1]["headers"]
    assert first["cookie"] == "a=1; B___x=v=="
    assert "cookie" not in second


def test_set_cookie_parsing() -> None:
    values = ["S___n=eyJ9.abc.def=; path=/; Max-Age=1209600; httponly; samesite=lax", "other=1"]
    assert parse_set_cookies(values) == {"S___n": "eyJ9.abc.def=", "other": "1"}


async def test_client_headers_go_with_every_request(stub: Any, fast: HttpClientConfig) -> None:
    runner, app = stub
    async with HttpClient(fast, headers={"X-Rewardgym-Token": "t0k"}) as client:
        await client.post(responses_url(runner), json=BODY, headers={"Authorization": "Bearer b"})
        await client.post(responses_url(runner), json=BODY)
    first, second = app.requests[0]["headers"], app.requests[1]["headers"]
    assert first["x-rewardgym-token"] == "t0k" and first["authorization"] == "Bearer b"
    assert second["x-rewardgym-token"] == "t0k" and "authorization" not in second


async def test_compressed_replies_are_decoded_on_both_transports(fast: HttpClientConfig) -> None:
    """Servers should not compress unasked, but proxies do: the body comes back decoded either way."""
    import gzip
    import zlib

    from aiohttp import web

    payload = b'{"ok": true}'
    bodies = {"gzip": gzip.compress(payload), "deflate": zlib.compress(payload)}

    async def handler(request: web.Request) -> web.Response:
        kind = request.match_info["kind"]
        return web.Response(body=bodies[kind], headers={"Content-Encoding": kind})

    app = web.Application()
    app.router.add_get("/{kind}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with HttpClient(fast) as client:
            for kind in bodies:
                reply = await client.get(f"http://127.0.0.1:{port}/{kind}")
                assert reply.json() == {"ok": True}, kind
    finally:
        await runner.cleanup()
