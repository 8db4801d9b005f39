"""Slow clients, slow upstreams and huge upstream replies are bounded.

- Our servers disconnect a client that does not deliver a whole request within ``request_read_timeout_s``
  (slowloris: connections that send nothing, half a head, or a head and part of a body), and stay healthy.
- An upstream that trickles its reply a byte per second is cut off by ``http.total_timeout_s`` (each byte
  resets the read timeout) and its connection closed; a 50 MB reply is refused past ``http.max_reply_bytes``
  as ``upstream_reply_too_large``, without a retry — on both client transports (lean HTTP/1.1 and aiohttp).

Everything is real: the fault upstream (``tests/stubs/fault_upstream.py``) and ``gym env start`` run as
processes on 127.0.0.1; the client-side cases drive our :class:`HttpClient` against the upstream process.
"""

from __future__ import annotations

import asyncio
import select
import signal
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from rewardgym.http.client import HttpClient
from rewardgym.http.config import HttpClientConfig
from rewardgym.http.errors import UpstreamReplyTooLarge, UpstreamTimeout
from tests.stubs.fault_upstream import FaultUpstream, start_fault_upstream
from tests.stubs.processes import (
    GymProcess,
    instances,
    kill_marked,
    new_marker,
    no_marked_processes,
    poll,
    start_env,
    url_answers,
)
from tests.stubs.reliability_stack import MODEL, env_args, model_override

READ_DEADLINE_S = 2.0
TOTAL_TIMEOUT_S = 2.0


@dataclass
class Stack:
    upstream: FaultUpstream
    env: GymProcess
    head: str


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("bounds-stack")
    marker = new_marker()
    upstream = start_fault_upstream("--dribble-s", "1.0")
    extra = (
        f"++mcqa.resources_servers.mcqa.request_read_timeout_s={READ_DEADLINE_S}",
        model_override("request_read_timeout_s", READ_DEADLINE_S),
        model_override("http.total_timeout_s", TOTAL_TIMEOUT_S),
        model_override("http.max_attempts", 2),
        model_override("http.backoff_max_s", 0.1),
    )
    try:
        env, head = start_env(env_args(upstream.url, root / "logs", read_timeout_s=600, extra=extra),
                              cwd=root, marker=marker)  # fmt: skip
        try:
            yield Stack(upstream, env, head)
        finally:
            env.signal(signal.SIGTERM)
            env.finish(30)
            assert not no_marked_processes(marker)
    finally:
        upstream.stop()
        kill_marked(marker)


def _url(stack: Stack, name: str) -> str:
    return str(instances(stack.head)[name]["url"]).rstrip("/")


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether the peer closed ``sock`` (readable with EOF or reset), without blocking."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True


@pytest.mark.parametrize("server", ["mcqa", MODEL])
def test_half_open_connections_are_closed_after_the_read_deadline(stack: Stack, server: str) -> None:
    url = _url(stack, server)
    host, port = url.removeprefix("http://").split(":")
    partial = [
        b"",  # connects and sends nothing
        b"POST /verify HTTP/1.1\r\nHost: x\r\nContent-Type: appl",  # half a request head
        b'POST /verify HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n{"res',  # head + part of a body
    ]
    opened = time.monotonic()
    socks = []
    for index in range(300):
        sock = socket.create_connection((host, int(port)), timeout=5)
        if partial[index % 3]:
            sock.sendall(partial[index % 3])
        socks.append(sock)
    try:
        # The server keeps serving while they are held.
        assert url_answers(url + "/", timeout=2.0)
        early = sum(_closed_by_peer(s) for s in socks)
        elapsed = time.monotonic() - opened
        if elapsed < READ_DEADLINE_S * 0.75:
            assert early == 0, f"{early} connections closed after {elapsed:.2f} s, before the deadline"
        poll(lambda: all(_closed_by_peer(s) or s.fileno() < 0 for s in socks), timeout=20.0)
        took = time.monotonic() - opened
        assert READ_DEADLINE_S * 0.9 <= took < READ_DEADLINE_S + 15, took
        assert url_answers(url + "/", timeout=2.0)
    finally:
        for sock in socks:
            sock.close()


def _read_reply(sock: socket.socket) -> bytes:
    """One whole HTTP reply (head and ``Content-Length`` body) from ``sock``, however the writes split it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed after {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed mid-body"
        body += chunk
    return head


def test_a_slow_but_timely_request_is_still_answered(stack: Stack) -> None:
    url = _url(stack, "mcqa")
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        time.sleep(0.5)  # the client's own pace (not synchronisation): within the 2 s deadline
        sock.sendall(b"\r\n")
        assert _read_reply(sock).startswith(b"HTTP/1.1 200")
        # After the reply, the connection idles under the keep-alive timeout (30 s), not the read deadline:
        # idle past the deadline (the client's pace again), then the next request is still answered.
        time.sleep(READ_DEADLINE_S + 0.5)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _read_reply(sock).startswith(b"HTTP/1.1 200")


def _responses_body(text: str) -> bytes:
    return orjson.dumps({"input": [{"role": "user", "content": text}], "model": "fault-model"})


def _post(url: str, body: bytes, timeout: float = 60.0) -> tuple[int, Any, float]:
    import urllib.error
    import urllib.request

    start = time.monotonic()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, orjson.loads(reply.read()), time.monotonic() - start
    except urllib.error.HTTPError as exc:
        return exc.code, orjson.loads(exc.read()), time.monotonic() - start


def test_a_dribbling_upstream_is_cut_off_by_the_total_timeout(stack: Stack) -> None:
    stack.upstream.reset_stats()
    status, body, took = _post(_url(stack, MODEL) + "/v1/responses", _responses_body("q [[fault:dribble:0]]"))
    assert status == 504, body
    assert body["error"]["type"] == "upstream_timeout"
    # 2 attempts x 2 s total each (+ backoff <= 0.1 s); without the total bound each would run ~200 s.
    assert 2 * TOTAL_TIMEOUT_S * 0.9 <= took < 2 * TOTAL_TIMEOUT_S + 8, took
    assert stack.upstream.stats()["faults"] == {"dribble": 2}
    # The model server closed its upstream connections: nothing is left in flight at the upstream.
    poll(lambda: stack.upstream.stats()["in_flight"] == 0, timeout=10.0)


def test_a_huge_upstream_reply_is_refused_once_not_retried(stack: Stack) -> None:
    stack.upstream.reset_stats()
    status, body, _ = _post(_url(stack, MODEL) + "/v1/responses", _responses_body("q [[fault:huge:0]]"))
    assert status == 502, body
    assert body["error"]["type"] == "upstream_reply_too_large"
    assert "larger than 33,554,432 bytes" in body["error"]["message"]
    assert stack.upstream.stats()["faults"] == {"huge": 1}  # final: not fetched again
    status, body, _ = _post(_url(stack, MODEL) + "/v1/responses", _responses_body("a normal question"))
    assert status == 200, body


@pytest.mark.parametrize("fast_http", [True, False], ids=["lean", "aiohttp"])
def test_both_client_transports_bound_time_and_size(fast_http: bool) -> None:
    with start_fault_upstream("--dribble-s", "1.0", "--huge-bytes", "3000000") as upstream:
        url = upstream.url + "/v1/chat/completions"

        def body(text: str) -> dict[str, Any]:
            return {"model": "m", "messages": [{"role": "user", "content": text}]}

        async def main() -> None:
            config = HttpClientConfig(
                total_timeout_s=1.0, max_reply_bytes=2_000_000, max_attempts=3, backoff_max_s=0.05,
                fast_http=fast_http,
            )  # fmt: skip
            async with HttpClient(config) as client:
                start = time.monotonic()
                with pytest.raises(UpstreamTimeout):
                    await client.post(url, json=body("[[fault:dribble:0]]"))
                assert 3 * 0.9 <= time.monotonic() - start < 3 * 1.0 + 3
                with pytest.raises(UpstreamReplyTooLarge, match=r"larger than 2,000,000 bytes"):
                    await client.post(url, json=body("[[fault:huge:0]]"))
                reply = await client.post(url, json=body("fine"))
                assert reply.json()["choices"][0]["message"]["content"] == "\\boxed{B}"

        asyncio.run(main())
        assert upstream.stats()["faults"] == {"dribble": 3, "huge": 1}
        poll(lambda: upstream.stats()["in_flight"] == 0, timeout=10.0)


@pytest.mark.parametrize("fast_http", [True, False], ids=["lean", "aiohttp"])
def test_a_compressed_bomb_is_cut_off_after_decoding(fast_http: bool) -> None:
    """A 50 KB gzip body that inflates to 50 MB is refused at the limit of the decoded size."""
    import gzip

    bomb = gzip.compress(b"0" * 50_000_000, compresslevel=9)
    assert len(bomb) < 100_000

    async def main() -> None:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
            writer.write(f"{head}Content-Length: {len(bomb)}\r\n\r\n".encode() + bomb)
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        config = HttpClientConfig(max_reply_bytes=4_000_000, fast_http=fast_http)
        async with server, HttpClient(config) as client:
            with pytest.raises(UpstreamReplyTooLarge, match=r"larger than 4,000,000 bytes"):
                await client.get(f"http://127.0.0.1:{port}/")

    asyncio.run(main())
