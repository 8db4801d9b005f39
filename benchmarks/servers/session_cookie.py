"""CPU per request of the session cookie alone: ``servers.cookies.SessionCookies`` vs Starlette's way.

Starlette's ``SessionMiddleware`` (the standard alternative, which ``SessionCookies`` is byte-compatible with)
does, per request that carries the cookie: ``TimestampSigner.unsign`` (HMAC) + base64 + ``json.loads``, and
per response: ``json.dumps`` + base64 + ``TimestampSigner.sign`` (HMAC). ``SessionCookies`` remembers
verified values and re-sends the value signed for a session id. Both are timed here on the steady state of a
rollout: the client sends back the cookie it was given, the session holds only its id.

Usage::

    python benchmarks/servers/session_cookie.py [--requests 200000] [--sessions 256] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from base64 import b64decode, b64encode

import itsdangerous
from starlette.middleware.sessions import Session
from starlette.requests import cookie_parser

from rewardgym.servers.cookies import SessionCookies

SECRET = "benchmark-secret"
NAME = "ExactMatchServer___env"


def starlette_way(cookie_headers: list[bytes], requests: int) -> float:
    """CPU seconds of ``requests`` requests done as ``SessionMiddleware`` does them."""
    signer = itsdangerous.TimestampSigner(SECRET)
    flags = "; path=/; Max-Age=1209600; httponly; samesite=lax"
    started = time.process_time()
    for i in range(requests):
        header = cookie_headers[i % len(cookie_headers)]
        value = cookie_parser(header.decode("latin-1")).get(NAME)
        data = None
        if value:
            try:
                data = json.loads(b64decode(signer.unsign(value.encode(), max_age=1209600)))
            except itsdangerous.BadSignature:
                data = None
        session = Session(data or {})
        if not session.get("session_id"):
            session["session_id"] = uuid.uuid4().hex
        signed = signer.sign(b64encode(json.dumps(session).encode("utf-8")))
        (b"set-cookie", f"{NAME}={signed.decode('utf-8')}{flags}".encode("latin-1"))
    return time.process_time() - started


def ours(cookie_headers: list[bytes], requests: int) -> float:
    """CPU seconds of ``requests`` requests through :class:`SessionCookies`."""
    cookies = SessionCookies(SECRET, NAME)
    started = time.process_time()
    for i in range(requests):
        session, had = cookies.open(cookie_headers[i % len(cookie_headers)])
        cookies.headers(session, had)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--sessions", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    signer = itsdangerous.TimestampSigner(SECRET)
    ids = [uuid.uuid4().hex for _ in range(args.sessions)]
    payloads = [b64encode(json.dumps({"session_id": sid}).encode()) for sid in ids]
    headers = [f"{NAME}={signer.sign(payload).decode()}".encode() for payload in payloads]
    for name, run in (("starlette", starlette_way), ("SessionCookies", ours)):
        best = min(run(headers, args.requests) for _ in range(args.repeat))
        print(f"{name:>15}: {best / args.requests * 1e6:6.2f} µs CPU per request (best of {args.repeat})")


if __name__ == "__main__":
    main()
