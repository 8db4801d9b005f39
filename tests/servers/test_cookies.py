"""The session cookie (`servers.cookies`): Starlette-compatible bytes, expiry, refresh, bounded caches."""

from __future__ import annotations

import json
import os
import uuid
from base64 import b64encode
from typing import Any

import itsdangerous
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from rewardgym.launch.serve import ThreadedServer
from rewardgym.servers.cookies import MAX_AGE_S, SessionCookies, new_session_id
from tests.stubs.client import call

SECRET = "cookie-secret-for-tests"
NAME = "Probe___probe"


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FixedTimeSigner(itsdangerous.TimestampSigner):
    def __init__(self, secret: str, timestamp: int) -> None:
        super().__init__(secret)
        self.timestamp = timestamp

    def get_timestamp(self) -> int:
        return self.timestamp


def cookie_value(header: tuple[bytes, bytes]) -> str:
    assert header[0] == b"set-cookie"
    pair = header[1].decode().split(";", 1)[0]
    name, _, value = pair.partition("=")
    assert name == NAME
    return value


def test_signature_is_itsdangerous_timestamp_signature() -> None:
    cookies = SessionCookies(SECRET, NAME)
    payload = b64encode(json.dumps({"session_id": "abc123"}).encode())
    assert cookies.sign(payload, 1_700_000_000) == FixedTimeSigner(SECRET, 1_700_000_000).sign(payload)
    assert cookies.sign(payload, 1_700_000_000) != SessionCookies("other", NAME).sign(payload, 1_700_000_000)


def test_open_keeps_or_creates_the_session_id() -> None:
    cookies = SessionCookies(SECRET, NAME)
    session, had = cookies.open(None)
    assert not had and len(session["session_id"]) == 32
    value = cookie_value(cookies.headers(session, had)[1])
    again, had = cookies.open(f"other=1; {NAME}={value}".encode())
    assert had and again == session
    forged, had = cookies.open(f"{NAME}={value[:-2]}xx".encode())
    assert not had and forged["session_id"] != session["session_id"]
    garbage, had = cookies.open(f"{NAME}=not-a-cookie".encode())
    assert not had and garbage["session_id"] != session["session_id"]


def test_expiry_and_refresh() -> None:
    clock = Clock()
    cookies = SessionCookies(SECRET, NAME, refresh_s=60, clock=clock)
    first = cookies.headers({"session_id": "s1"}, False)
    assert first[0] == (b"vary", b"Cookie")
    value = cookie_value(first[1])
    clock.now += 59
    assert cookies.headers({"session_id": "s1"}, True) == first  # cached: not re-signed
    clock.now += 1
    refreshed = cookie_value(cookies.headers({"session_id": "s1"}, True)[1])
    assert refreshed != value
    assert cookies.load(value) == {"session_id": "s1"}  # still valid: 60 s old
    clock.now += MAX_AGE_S - 59
    assert cookies.load(value) is None  # older than max_age (it was verified and cached before)
    assert cookies.load(refreshed) == {"session_id": "s1"}
    fresh = SessionCookies(SECRET, NAME, clock=clock)  # not cached there: checked by the signer
    assert fresh.load(value) is None and fresh.load(refreshed) == {"session_id": "s1"}
    before = SessionCookies(SECRET, NAME, clock=Clock(1_800_000_000.0 + 50))
    assert before.load(refreshed) is None  # signed at +60 s: "in the future" for this clock


def test_other_session_content_and_clearing() -> None:
    cookies = SessionCookies(SECRET, NAME)
    data = {"session_id": "s2", "user": "ü"}
    value = cookie_value(cookies.headers(data, False)[1])
    assert SessionCookies(SECRET, NAME).load(value) == data
    assert cookies.headers({}, True)[1] == (
        b"set-cookie",
        f"{NAME}=null; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT; httponly; samesite=lax".encode(),
    )
    assert cookies.headers({}, False) == [(b"vary", b"Cookie")]


def test_caches_are_bounded() -> None:
    cookies = SessionCookies(SECRET, NAME, cache_size=2)
    values = [cookie_value(cookies.headers({"session_id": f"s{i}"}, False)[1]) for i in range(5)]
    assert len(cookies._verified) == 2 and len(cookies._signed_ids) == 2
    assert all(cookies.load(v) is not None for v in values)  # evicted values are verified again


def starlette_app() -> Starlette:
    async def show(request: Request) -> JSONResponse:
        request.session.setdefault("from_starlette", True)
        return JSONResponse(dict(request.session))

    return Starlette(
        routes=[Route("/", show)],
        middleware=[Middleware(SessionMiddleware, secret_key=SECRET, session_cookie=NAME)],
    )


def test_cookies_interoperate_with_starlettes_session_middleware() -> None:
    ours = SessionCookies(SECRET, NAME)
    session, _ = ours.open(None)
    header = ours.headers(session, False)[1][1].decode()
    with ThreadedServer(starlette_app()) as starlette:
        reply = call(starlette.url, "GET", "/", cookies={NAME: cookie_value(ours.headers(session, False)[1])})
        seen: dict[str, Any] = reply.json()
        assert seen == {"session_id": session["session_id"], "from_starlette": True}
        set_cookie = reply.header("set-cookie")
        assert set_cookie is not None and set_cookie.split(";", 1)[1] == header.split(";", 1)[1]
        theirs = reply.cookies[NAME]
    assert ours.load(theirs) == seen


def test_new_session_ids_are_uuid4_hex_unique_and_not_shared_with_a_fork() -> None:
    ids = [new_session_id() for _ in range(3 * 256 + 7)]  # across several batches
    assert len(set(ids)) == len(ids)
    for sid in ids:
        parsed = uuid.UUID(sid)
        assert parsed.hex == sid and parsed.version == 4 and parsed.variant == uuid.RFC_4122
    new_session_id()  # the parent now holds a partly used batch
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child writes its next id and leaves at once
        os.write(write, new_session_id().encode())
        os._exit(0)
    os.close(write)
    child_id = os.read(read, 64).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert len(child_id) == 32 and child_id != new_session_id()
