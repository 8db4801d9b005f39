"""The lean HTTP/1.1 transport against real TCP peers that answer byte for byte what each test needs:
framing (length, chunked, close), keep-alive reuse and its race, timeouts, limits, cancellation, garbage."""

from __future__ import annotations

import asyncio
import gc
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest

from rewardgym.http.h1conn import H1Reply
from rewardgym.http.h1pool import (
    H1ConnectError,
    H1Disconnected,
    H1Pool,
    H1ProtocolError,
    Target,
)

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "Peer"], Awaitable[None]]
OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}'


@dataclass
class Peer:
    """A raw TCP server on 127.0.0.1: counts connections and requests, runs ``handler`` per connection."""

    url: str = ""
    connections: int = 0
    open_now: int = 0
    most_open: int = 0
    requests: list[bytes] = field(default_factory=list)
    closed: asyncio.Event = field(default_factory=asyncio.Event)


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``condition`` until it holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.005)


async def read_request(reader: asyncio.StreamReader, peer: Peer) -> bytes | None:
    """One request (head + Content-Length body), or None at EOF."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    body = await reader.readexactly(length) if length else b""
    peer.requests.append(head + body)
    return head + body


@asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[Peer]:
    peer = Peer()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer.connections += 1
        peer.open_now += 1
        peer.most_open = max(peer.most_open, peer.open_now)
        try:
            await handler(reader, writer, peer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            peer.open_now -= 1
            writer.close()
            peer.closed.set()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    peer.url = f"http://127.0.0.1:{port}/v1/x?q=1"
    async with server:
        yield peer


async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer) -> None:
    while await read_request(reader, peer) is not None:
        writer.write(OK)
        await writer.drain()


async def test_request_line_headers_and_body_are_sent() -> None:
    async with serving(keep_alive) as peer:
        pool = H1Pool()
        reply = await pool.request("POST", peer.url, b'{"a":1}', {"Content-Type": "application/json"})
        await pool.close()
    sent = peer.requests[0]
    assert sent.startswith(b"POST /v1/x?q=1 HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"\r\nContent-Type: application/json\r\n" in sent
    assert b"\r\nContent-Length: 7\r\n\r\n" in sent and sent.endswith(b'{"a":1}')
    assert (reply.status, reply.body) == (200, b'{"ok":true}')
    assert reply.headers["CONTENT-TYPE"] == "application/json" == reply.headers.get("content-type")


async def test_a_request_leaves_no_reference_cycle() -> None:
    """Every object of a request is freed by reference counting: a cycle per request (the reply timer's
    closure once re-armed itself) left its future and reply to the cycle collector, whose young collections
    then walked 10^5 such objects in a busy process."""
    async with serving(keep_alive) as peer:
        pool = H1Pool(read_timeout_s=30.0, total_timeout_s=60.0)  # both bounds: the reply timer is armed
        assert (await pool.request("GET", peer.url)).status == 200  # the connection, opened once
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)  # unreachable cycles are kept in gc.garbage instead of freed
        try:
            for _ in range(20):
                assert (await pool.request("GET", peer.url)).status == 200
            gc.collect()
            ours = [o for o in gc.garbage if isinstance(o, H1Reply | asyncio.TimerHandle)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        await pool.close()
    assert ours == []


async def test_connections_are_kept_alive_and_reused() -> None:
    async with serving(keep_alive) as peer:
        pool = H1Pool()
        for _ in range(5):
            assert (await pool.request("GET", peer.url)).status == 200
        await pool.close()
    assert peer.connections == 1 and len(peer.requests) == 5


async def test_chunked_reply_and_repeated_headers() -> None:
    async def chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer) -> None:
        await read_request(reader, peer)
        writer.write(
            b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nSet-Cookie: a=1; path=/\r\n"
            b"Set-Cookie: b=2\r\nX-Many: 1\r\nX-Many: 2\r\n\r\n4\r\nabcd\r\n3\r\nefg\r\n0\r\n\r\n"
        )
        await writer.drain()
        await read_request(reader, peer)  # hold the connection open: the reply must end on its framing

    async with serving(chunked) as peer:
        pool = H1Pool()
        reply = await pool.request("GET", peer.url)
        await pool.close()
    assert (reply.status, reply.body) == (201, b"abcdefg")
    assert reply.set_cookies == ["a=1; path=/", "b=2"]
    assert reply.headers["x-many"] == "1, 2"


async def test_reply_framed_by_connection_close_and_not_reused() -> None:
    async def close_framed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer) -> None:
        await read_request(reader, peer)
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end")
        await writer.drain()

    async with serving(close_framed) as peer:
        pool = H1Pool()
        first = await pool.request("GET", peer.url)
        second = await pool.request("GET", peer.url)
        await pool.close()
    assert first.body == second.body == b"until the end"
    assert peer.connections == 2


async def test_interim_1xx_reply_is_skipped() -> None:
    async def continue_first(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer) -> None:
        await read_request(reader, peer)
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n" + OK)
        await writer.drain()
        await read_request(reader, peer)

    async with serving(continue_first) as peer:
        pool = H1Pool()
        reply = await pool.request("POST", peer.url, b"{}")
        await pool.close()
    assert (reply.status, reply.body) == (200, b'{"ok":true}')


async def test_idle_connection_closed_by_the_peer_is_replaced_transparently() -> None:
    """The keep-alive race: the peer drops a kept-alive connection; the request goes out again, once."""

    async def one_per_connection(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer
    ) -> None:
        await read_request(reader, peer)
        writer.write(OK)  # claims keep-alive, then closes: the next request on it sees EOF, no bytes
        await writer.drain()

    async with serving(one_per_connection) as peer:
        pool = H1Pool()
        await pool.request("GET", peer.url)
        await asyncio.wait_for(peer.closed.wait(), 5)
        reply = await pool.request("GET", peer.url)
        await pool.close()
    assert reply.status == 200
    assert peer.connections == 2 and len(peer.requests) == 2


async def test_fresh_connection_closed_without_reply_is_an_error_not_a_retry() -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer) -> None:
        await read_request(reader, peer)

    async with serving(hang_up) as peer:
        pool = H1Pool()
        with pytest.raises(H1Disconnected):
            await pool.request("POST", peer.url, b"{}")
        await pool.close()
    assert peer.connections == 1


async def test_reply_cut_short_is_an_error_not_a_retry() -> None:
    async def cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer) -> None:
        while await read_request(reader, peer) is not None:
            if len(peer.requests) == 1:
                writer.write(OK)
            else:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")
                await writer.drain()
                return

    async with serving(cut) as peer:
        pool = H1Pool()
        await pool.request("GET", peer.url)
        with pytest.raises(H1Disconnected):
            await pool.request("GET", peer.url)  # a reused connection, but bytes came: never resent
        await pool.close()
    assert len(peer.requests) == 2


async def test_malformed_reply_is_a_protocol_error() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer) -> None:
        await read_request(reader, peer)
        writer.write(b"SMTP ready\r\n\r\n")
        await writer.drain()
        await read_request(reader, peer)

    async with serving(garbage) as peer:
        pool = H1Pool()
        with pytest.raises(H1ProtocolError):
            await pool.request("GET", peer.url)
        await pool.close()


async def test_refused_connection() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    pool = H1Pool()
    with pytest.raises(H1ConnectError, match=f"127.0.0.1:{port}"):
        await pool.request("GET", f"http://127.0.0.1:{port}/")
    await pool.close()


async def test_read_timeout_is_inactivity_not_duration() -> None:
    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer) -> None:
        await read_request(reader, peer)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n")
        for byte in b"abcdef":  # 6 bytes over ~0.6 s: always less than 0.3 s apart
            await asyncio.sleep(0.1)
            writer.write(bytes([byte]))
            await writer.drain()
        await read_request(reader, peer)

    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer) -> None:
        await read_request(reader, peer)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nab")
        await writer.drain()
        await read_request(reader, peer)  # never sends the rest

    async with serving(trickle) as peer:
        pool = H1Pool(read_timeout_s=0.3)
        assert (await pool.request("GET", peer.url)).body == b"abcdef"
        await pool.close()
    async with serving(stall) as peer:
        pool = H1Pool(read_timeout_s=0.3)
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="no data"):
            await pool.request("GET", peer.url)
        assert time.monotonic() - started < 3
        await asyncio.wait_for(peer.closed.wait(), 5)  # the timed-out connection was closed
        await pool.close()


async def test_total_timeout_bounds_the_whole_request() -> None:
    async def trickle_forever(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer) -> None:
        await read_request(reader, peer)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        while True:
            await asyncio.sleep(0.05)
            writer.write(b"x")
            await writer.drain()

    async with serving(trickle_forever) as peer:
        pool = H1Pool(read_timeout_s=10)
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await pool.request("GET", peer.url, total_timeout_s=0.4)
        assert time.monotonic() - started < 3
        await pool.close()


async def test_pool_limit_bounds_open_connections() -> None:
    release = asyncio.Event()

    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer) -> None:
        while await read_request(reader, peer) is not None:
            if len(peer.requests) >= 2:
                release.set()
            await release.wait()
            writer.write(OK)
            await writer.drain()

    async with serving(slow) as peer:
        pool = H1Pool(limit=2)
        replies = await asyncio.wait_for(
            asyncio.gather(*(pool.request("GET", peer.url) for _ in range(6))), 10
        )
        await pool.close()
    assert [r.status for r in replies] == [200] * 6
    assert peer.connections == 2 and peer.most_open == 2 and len(peer.requests) == 6


async def test_cancelled_request_closes_its_connection() -> None:
    async def hold_first(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer) -> None:
        while await read_request(reader, peer) is not None:
            if len(peer.requests) > 1:
                writer.write(OK)
                await writer.drain()

    async with serving(hold_first) as peer:
        pool = H1Pool()
        task = asyncio.ensure_future(pool.request("GET", peer.url))
        await until(lambda: bool(peer.requests))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(peer.closed.wait(), 5)
        assert (await pool.request("GET", peer.url)).status == 200
        await pool.close()
    assert peer.connections == 2


def test_target_parsing() -> None:
    target = Target.parse("http://localhost:8000/v1/responses?x=1")
    assert (target.host, target.port, target.target, target.host_header) == (
        "localhost",
        8000,
        b"/v1/responses?x=1",
        b"localhost:8000",
    )
    assert Target.parse("http://example.com").target == b"/"
    assert Target.parse("http://example.com").port == 80
    with pytest.raises(ValueError):
        Target.parse("https://example.com/")


def test_supported_urls_and_ipv6_host_header() -> None:
    assert Target.supported("http://127.0.0.1:8000/run")
    assert not Target.supported("https://api.openai.com/v1")
    assert not Target.supported("http://user:secret@host/v1")  # credentials: aiohttp's job
    assert not Target.supported("http://host/caf\u00e9")
    assert Target.parse("http://[::1]/x").host_header == b"[::1]"
    assert Target.parse("http://[::1]:81/x").host_header == b"[::1]:81"
