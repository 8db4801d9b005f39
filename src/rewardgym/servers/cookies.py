"""The signed session cookie of a server: Starlette's ``SessionMiddleware`` format, signed as rarely as
possible.

Contract:
- The cookie is byte-compatible with Starlette's ``SessionMiddleware`` (same secret → either side accepts the
  other's cookie): value = itsdangerous ``TimestampSigner(secret).sign(b64encode(json.dumps(session)))``,
  header ``<name>=<value>; path=/; Max-Age=1209600; httponly; samesite=lax``; a signature older than
  ``max_age`` (14 days) or not made with the secret is rejected (the request starts a new session).
- :meth:`SessionCookies.open` turns the request's ``Cookie`` header into a Starlette ``Session`` that always
  holds ``session_id`` (a uuid4 hex on first contact, :func:`new_session_id`, else kept) and says whether a
  valid cookie came in.
  Verified cookie values are remembered (bounded FIFO, ``cache_size``) with their signing time, so a cookie
  seen before costs a dict lookup and an age check instead of an HMAC, base64 and JSON round trip.
  ``cache_size`` (4,096) is what the sessions in flight need: an entry outlives the next ``cache_size`` new
  sessions, so a rollout's session stays remembered for its whole life while at most that many rollouts run
  at once (a longer-lived one is verified again: ≈ 3 µs, never an error). Each entry is ≈ 1 KiB and every
  rollout opens a session per server, so a larger bound only kept finished sessions: 16,384 held ≈ 36 MiB
  more in a one-process stack (peak 135 → 99 MiB over 20,000 rollouts).
- :meth:`SessionCookies.headers` gives the headers every response carries (NeMo Gym re-sends the cookie on
  every response): ``Vary: Cookie`` and ``Set-Cookie``. A session that holds only its id — the normal case —
  reuses the value signed for that id until it is ``refresh_s`` old (then it is signed afresh, so a re-sent
  cookie stays valid for at least ``max_age - refresh_s``); any other content is signed on every response. A
  session emptied by the handler clears the cookie, as Starlette does.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from base64 import b64decode, urlsafe_b64encode
from binascii import b2a_base64
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import itsdangerous
from itsdangerous.encoding import base64_encode, int_to_bytes
from starlette.middleware.sessions import Session
from starlette.requests import cookie_parser

_DEFAULT_DIGEST = itsdangerous.TimestampSigner.default_digest_method

SESSION_ID_KEY = "session_id"
_ID_KEY = SESSION_ID_KEY.encode("ascii")
_ID_BATCH = 256
"""Session ids drawn per ``os.urandom`` call (16 bytes each)."""
_random_ids: list[str] = []
os.register_at_fork(after_in_child=_random_ids.clear)  # a forked server never repeats its parent's ids


def new_session_id() -> str:
    """A random version-4 UUID as 32 hex digits — ``uuid.uuid4().hex``, drawn from the same OS source
    (``os.urandom``) 256 at a time: one system call per 256 new sessions instead of one each (every rollout
    opens three)."""
    if not _random_ids:
        pool = bytearray(os.urandom(16 * _ID_BATCH))
        for start in range(0, len(pool), 16):
            pool[start + 6] = (pool[start + 6] & 0x0F) | 0x40  # version 4
            pool[start + 8] = (pool[start + 8] & 0x3F) | 0x80  # RFC 4122 variant
        digits = pool.hex()
        _random_ids.extend(digits[i : i + 32] for i in range(0, 32 * _ID_BATCH, 32))
    return _random_ids.pop()


_SHA1_BLOCK = 64
_IPAD = bytes(byte ^ 0x36 for byte in range(256))
_OPAD = bytes(byte ^ 0x5C for byte in range(256))


def _sha1_hmac_states(key: bytes) -> tuple[Any, Any]:
    """The SHA-1 states after ``key ^ ipad`` and ``key ^ opad``: HMAC-SHA1(key, m) is then
    ``outer.copy().update(inner.copy().update(m).digest()).digest()``."""
    if len(key) > _SHA1_BLOCK:
        key = hashlib.sha1(key).digest()
    padded = key.ljust(_SHA1_BLOCK, b"\0")
    return hashlib.sha1(padded.translate(_IPAD)), hashlib.sha1(padded.translate(_OPAD))


MAX_AGE_S = 14 * 24 * 60 * 60
"""Starlette's default cookie lifetime (seconds)."""

Header = tuple[bytes, bytes]
_VARY: Header = (b"vary", b"Cookie")


class SessionCookies:
    """Signs and verifies the session cookie ``name`` of one server; see the module docstring."""

    def __init__(
        self,
        secret: str,
        name: str,
        *,
        max_age: int = MAX_AGE_S,
        refresh_s: float = 3600.0,
        cache_size: int = 4096,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.name = name
        self._clock = clock
        self.max_age = max_age
        self.refresh_s = refresh_s
        self.cache_size = cache_size
        self._signer = itsdangerous.TimestampSigner(secret)
        # ``TimestampSigner.sign``'s MAC: HMAC-SHA1 (itsdangerous's default digest) with the signer's derived
        # key, from the key's two padded SHA-1 states copied per cookie (RFC 2104, as ``hmac.HMAC`` does
        # inside): 0.6 µs a cookie, against 1.5 for ``hmac.digest`` (an OpenSSL HMAC context set up per call)
        # and 6 for its generic path — every rollout signs three.
        assert self._signer.digest_method is _DEFAULT_DIGEST
        self._inner, self._outer = _sha1_hmac_states(self._signer.derive_key())
        self._flags = f"; path=/; Max-Age={max_age}; httponly; samesite=lax"
        self._stamp_at = -1
        self._stamp = b""
        self._clear: Header = (
            b"set-cookie",
            f"{name}=null; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT; httponly; samesite=lax".encode(),
        )
        # FIFO caches: an OrderedDict drops its oldest entry in O(1); a plain dict's ``next(iter(d))`` scans
        # the slots freed by earlier drops, which made a new session cost 2-4x more once a cache was full.
        self._verified: OrderedDict[str, tuple[dict[str, Any], int]] = OrderedDict()
        self._signed_ids: OrderedDict[str, tuple[Header, int]] = OrderedDict()

    # ----------------------------------------------------------------- incoming
    def load(self, value: str) -> dict[str, Any] | None:
        """The session data of a cookie value, or ``None`` when it is forged, expired or malformed."""
        now = int(self._clock())
        known = self._verified.get(value)
        if known is not None:
            data, signed_at = known
            if 0 <= now - signed_at <= self.max_age:
                return data
            del self._verified[value]
            return None
        try:
            payload, stamp = self._signer.unsign(value.encode("utf-8"), return_timestamp=True)
            data = json.loads(b64decode(payload))
        except (itsdangerous.BadSignature, ValueError):
            return None
        signed_at = int(stamp.timestamp())
        if not isinstance(data, dict) or not 0 <= now - signed_at <= self.max_age:
            return None
        self._remember(value, data, signed_at)
        return data

    def open(self, cookie_header: bytes | None) -> tuple[Session, bool]:
        """The request's session (with a ``session_id``) and whether a valid cookie came with it."""
        data = None
        if cookie_header:
            value = cookie_parser(cookie_header.decode("latin-1")).get(self.name)
            if value:
                data = self.load(value)
        if not data:  # first contact (the usual case): the new session holds only its id
            return Session({SESSION_ID_KEY: new_session_id()}), data is not None
        session = Session(data)
        if not session.get(SESSION_ID_KEY):
            session[SESSION_ID_KEY] = new_session_id()
        return session, True

    # ----------------------------------------------------------------- outgoing
    def headers(self, session: dict[str, Any], had_cookie: bool) -> list[Header]:
        """``Vary`` and ``Set-Cookie`` headers of a response for ``session``."""
        if len(session) == 1:
            sid = session.get(SESSION_ID_KEY)
            if isinstance(sid, str):
                return [_VARY, self._id_cookie(sid)]
        if session:
            return [_VARY, self._sign(session)]
        return [_VARY, self._clear] if had_cookie else [_VARY]

    def _id_cookie(self, sid: str) -> Header:
        now = int(self._clock())
        cached = self._signed_ids.get(sid)
        if cached is not None and now - cached[1] < self.refresh_s:
            return cached[0]
        if sid.isascii() and sid.isalnum():  # always so for the ids of new_session_id: the lean path
            text = b'{"' + _ID_KEY + b'": "' + sid.encode("ascii") + b'"}'  # json.dumps of it, byte for byte
            header = self._header(text, {SESSION_ID_KEY: sid}, now)
        else:
            header = self._sign({SESSION_ID_KEY: sid}, now)
        self._bounded_put(self._signed_ids, sid, (header, now))
        return header

    def sign(self, payload: bytes, timestamp: int) -> bytes:
        """``TimestampSigner(secret).sign(payload)`` as signed at ``timestamp`` (same bytes, less work)."""
        if timestamp != self._stamp_at:  # the encoded timestamp changes once a second
            self._stamp_at, self._stamp = timestamp, b"." + base64_encode(int_to_bytes(timestamp))
        value = payload + self._stamp
        inner = self._inner.copy()
        inner.update(value)
        outer = self._outer.copy()
        outer.update(inner.digest())
        mac = outer.digest()
        return value + b"." + urlsafe_b64encode(mac).rstrip(b"=")

    def _sign(self, session: dict[str, Any], now: int | None = None) -> Header:
        signed_at = int(self._clock()) if now is None else now
        return self._header(json.dumps(session).encode("utf-8"), dict(session), signed_at)

    def _header(self, text: bytes, data: dict[str, Any], signed_at: int) -> Header:
        """The ``Set-Cookie`` header of the session whose JSON is ``text`` (``data``); remembered verified."""
        value = self.sign(b2a_base64(text, newline=False), signed_at).decode("ascii")
        self._remember(value, data, signed_at)
        return (b"set-cookie", f"{self.name}={value}{self._flags}".encode("latin-1"))

    def _remember(self, value: str, data: dict[str, Any], signed_at: int) -> None:
        self._bounded_put(self._verified, value, (data, signed_at))

    def _bounded_put(self, cache: OrderedDict[str, Any], key: str, entry: Any) -> None:
        cache[key] = entry
        if len(cache) > self.cache_size:
            cache.popitem(last=False)
