"""A complete HTTP reply (:class:`HttpReply`), and the reply-side helpers both transports of
:mod:`rewardgym.http.client` share: content decoding bounded by ``max_reply_bytes`` (a gzip bomb stays
small) and the ``Cookie`` / ``Set-Cookie`` headers.

Contract: :meth:`HttpReply.json` / :meth:`HttpReply.parse` raise
:class:`~rewardgym.http.errors.UpstreamProtocolError` naming the URL for a body that is not JSON or not the
model — garbage is never passed on as a result; :func:`decompress` undoes ``gzip`` / ``deflate`` (raw
deflate too) and raises :class:`~rewardgym.http.errors.UpstreamReplyTooLarge` past the limit.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from rewardgym.http.errors import UpstreamProtocolError, UpstreamReplyTooLarge, snippet

T = TypeVar("T", bound=BaseModel)
_UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class HttpReply:
    """A complete HTTP reply: status, body bytes, the cookies it set, and its headers."""

    url: str
    status: int
    body: bytes
    cookies: dict[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body parsed as JSON; :class:`UpstreamProtocolError` when it is not JSON."""
        try:
            return orjson.loads(self.body)
        except orjson.JSONDecodeError:
            raise UpstreamProtocolError(self.url, f"reply is not JSON: {snippet(self.body, 200)!r}") from None

    def parse(self, model: type[T], value: Any = _UNSET) -> T:
        """The body (or its already-parsed ``value``) validated as ``model``; :class:`UpstreamProtocolError`
        naming the URL and the first bad field otherwise — garbage is never passed on as a result."""
        try:
            if value is _UNSET:
                return model.model_validate_json(self.body)
            return model.model_validate(value)
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(p) for p in first["loc"]) or "body"
            raise UpstreamProtocolError(
                self.url, f"reply is not a valid {model.__name__} ({where}: {first['msg']})"
            ) from None


def too_large(url: str, limit: int) -> UpstreamReplyTooLarge:
    return UpstreamReplyTooLarge(url, f"reply larger than {limit:,} bytes (http.max_reply_bytes)")


def _inflate(url: str, body: bytes, wbits: int, limit: int) -> bytes:
    """``body`` inflated, never past ``limit`` bytes of output (a small gzip bomb stays small)."""
    inflater = zlib.decompressobj(wbits)
    out = inflater.decompress(body, limit + 1)
    if len(out) > limit or inflater.unconsumed_tail:
        raise too_large(url, limit)
    return out + inflater.flush()


def decompress(url: str, body: bytes, encoding: str, limit: int) -> bytes:
    """``body`` decoded from a ``gzip`` / ``deflate`` content encoding (what aiohttp would undo)."""
    kind = encoding.strip().lower()
    try:
        if kind in ("gzip", "x-gzip"):
            return _inflate(url, body, 16 + zlib.MAX_WBITS, limit)
        if kind == "deflate":
            try:
                return _inflate(url, body, zlib.MAX_WBITS, limit)
            except zlib.error:  # raw deflate, as some servers send it
                return _inflate(url, body, -zlib.MAX_WBITS, limit)
    except zlib.error as exc:
        raise UpstreamProtocolError(url, f"reply body is not valid {kind}: {exc}") from None
    raise UpstreamProtocolError(url, f"reply uses an unsupported content encoding {encoding!r}")


def cookie_header(cookies: Mapping[str, str]) -> str:
    """The ``Cookie`` request header for ``cookies`` (values are sent verbatim, as servers set them)."""
    return "; ".join(f"{name}={value}" for name, value in cookies.items())


def parse_set_cookies(values: Collection[str]) -> dict[str, str]:
    """Name → value of ``Set-Cookie`` header values (attributes such as ``path`` are dropped)."""
    cookies: dict[str, str] = {}
    for header in values:
        pair = header.split(";", 1)[0]
        name, sep, value = pair.partition("=")
        if sep and name.strip():
            cookies[name.strip()] = value.strip()
    return cookies
