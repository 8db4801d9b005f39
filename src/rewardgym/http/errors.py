"""Errors of an outbound HTTP call, and how a server answers each.

Contract:
- :class:`UpstreamError` and subclasses are raised by :mod:`rewardgym.http.client` when a call to another
  server or to an LLM upstream fails after its retries. A server app answers them with 502
  (:class:`UpstreamHTTPError`, :class:`UpstreamConnectionError`, :class:`UpstreamProtocolError` and its
  :class:`UpstreamReplyTooLarge`) or 504 (:class:`UpstreamTimeout`); an upstream's 4xx other than
  401/403/408/429 is answered 400 with type ``upstream_rejected`` (no retry can fix it), a refused key 500
  with type ``upstream_auth_error``; a request body that cannot be serialised (:class:`UnsendableRequest`)
  422 with type ``invalid_request``. They are :class:`~rewardgym.errors.ServerError` so a CLI caller prints
  them as one ``Error:`` line.
- :func:`error_kind` / :func:`error_message` read the ``error.type`` / ``error.message`` of a JSON error
  body (ours or OpenAI's): callers classify an answer by its type, never by a substring of its body.
- Messages name the URL without credentials or query string and never include a secret: a body quoted in
  a message (:func:`snippet`) is redacted *before* it is cut, so a cut never leaves a piece of a secret.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import orjson

from rewardgym.config.secrets import redact_text
from rewardgym.errors import ServerError

_BODY_SNIPPET = 500


def safe_url(url: str) -> str:
    """``url`` without user info, query or fragment (safe to print)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
    except ValueError:
        return "<invalid url>"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def snippet(body: bytes | str, limit: int = _BODY_SNIPPET) -> str:
    """A printable prefix of a response body, secrets masked (in any encoding) before it is cut."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = redact_text(text.strip())
    return text if len(text) <= limit else text[:limit] + "…"


class UpstreamError(ServerError):
    """A call to a peer server or an upstream failed (after retries)."""

    http_status = 502
    kind = "upstream_error"
    final = False
    """Set on an attempt's failure that no retry can fix (e.g. an invalid URL): raised at once."""

    def __init__(self, url: str, message: str) -> None:
        self.url = safe_url(url)
        super().__init__(f"{self.url}: {message}")


AUTH_STATUSES = frozenset({401, 403})
UPSTREAM_AUTH_KIND = "upstream_auth_error"
"""Error ``type`` of an answer saying that an upstream refused this server's credentials."""
RETRYABLE_4XX = frozenset({408, 429})
UPSTREAM_REJECTED_KIND = "upstream_rejected"
"""Error ``type`` of an answer saying that an upstream rejected the request itself (a 4xx other than
401/403/408/429, e.g. 400 for a malformed or over-long request): the same request fails again, so callers
do not retry it (the collector records it as ``http_4xx``)."""
VERIFIER_ERROR_KIND = "verifier_error"
"""Error ``type`` of an agent's answer saying that the environment's ``/verify`` failed (5xx, unreachable,
timed out, or no numeric ``reward``): the collector records it as ``verifier_error`` and retries it."""


def _error_field(body: bytes | str, name: str) -> str | None:
    try:
        error = orjson.loads(body).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    value = error.get(name) if isinstance(error, dict) else None
    return value if isinstance(value, str) else None


def error_kind(body: bytes | str) -> str | None:
    """The ``error.type`` of a JSON error body (ours or OpenAI's), if it has one."""
    return _error_field(body, "type")


def error_message(body: bytes | str) -> str | None:
    """The ``error.message`` of a JSON error body (ours or OpenAI's), if it has one."""
    return _error_field(body, "message")


class UpstreamHTTPError(UpstreamError):
    """The upstream answered with a non-success status."""

    kind = "upstream_http_error"

    def __init__(self, url: str, status: int, body: bytes, *, retry_after: float | None = None) -> None:
        self.status = status
        self.body = body
        self.retry_after = retry_after
        """Seconds the upstream asked to wait (its ``Retry-After``), passed on with a 429 answer."""
        if status in AUTH_STATUSES:
            # Our credentials were refused: no retry and no other row can succeed until the config is fixed.
            # Answered 500 (not the retryable 502) with its own kind, which the agent and collector pass on.
            self.kind = UPSTREAM_AUTH_KIND
            self.http_status = 500
        elif 400 <= status < 500 and status not in RETRYABLE_4XX:
            self.kind = UPSTREAM_REJECTED_KIND
            self.http_status = 400
        # The peer's own words when it answered a JSON error (ours or OpenAI's), not its JSON escaped again:
        # a failure that crossed three servers reads as plain text, not JSON in JSON in JSON.
        super().__init__(url, f"HTTP {status}: {error_message(body) or snippet(body)}")


class UpstreamTimeout(UpstreamError):
    """The upstream did not answer in time."""

    http_status = 504
    kind = "upstream_timeout"


class UpstreamConnectionError(UpstreamError):
    """The upstream could not be reached (refused, reset, DNS failure)."""

    kind = "upstream_unreachable"

    def __init__(self, url: str, message: str, *, dns_failure: bool = False, final: bool = False) -> None:
        self.dns_failure = dns_failure
        self.final = final
        super().__init__(url, message)


class UpstreamProtocolError(UpstreamError):
    """The upstream answered 2xx with a body that is not what the protocol requires."""

    kind = "upstream_bad_response"


class UpstreamReplyTooLarge(UpstreamProtocolError):
    """The upstream's reply was larger than ``http.max_reply_bytes``; no retry of the call (final)."""

    kind = "upstream_reply_too_large"
    final = True


class UnsendableRequest(UpstreamError):
    """The caller's request body cannot be serialised (e.g. an integer beyond 64 bits): nothing was sent.

    Answered 422 ``invalid_request`` — the caller's own request is at fault, so no retry can fix it.
    """

    http_status = 422
    kind = "invalid_request"
    final = True

    def __init__(self, url: str, message: str) -> None:
        self.url = safe_url(url)
        ServerError.__init__(self, message)
