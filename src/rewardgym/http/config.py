"""The configuration of the outbound HTTP client (timeouts, retries, pool, transport).

Contract: :class:`HttpClientConfig` is the ``http:`` block of every server's YAML config (a field of
:class:`rewardgym.servers.config.ServerConfig`); unknown keys are an error and every field carries a
docstring (its user documentation).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

_CONFIG = ConfigDict(extra="forbid")


class HttpClientConfig(BaseModel):
    """Timeouts and retry policy of the outbound HTTP client a server uses (to peers and upstreams)."""

    model_config = _CONFIG

    connect_timeout_s: float = Field(5.0, gt=0)
    """Seconds to establish a TCP connection before the attempt fails."""

    read_timeout_s: float = Field(600.0, gt=0)
    """Seconds to wait for the next chunk of a response (a model call can take minutes)."""

    total_timeout_s: float | None = Field(600.0, gt=0)
    """Bound on one whole attempt (connect + send + read), so an upstream that trickles bytes (each resets
    ``read_timeout_s``) cannot hold a call for ever; ``null`` removes the bound."""

    max_reply_bytes: int = Field(32 * 1024 * 1024, ge=1024)
    """Largest reply body accepted (after decompression); a larger one fails the call at once, unretried,
    as ``upstream_reply_too_large`` (HTTP 502 from a server) — the body is never buffered past this."""

    max_attempts: int = Field(4, ge=1, le=20)
    """Attempts per call, including the first; retries apply only to retryable failures."""

    backoff_base_s: float = Field(0.2, ge=0)
    """Base of the exponential backoff: attempt *n* sleeps uniformly in ``[0, base * 2**n]`` (full jitter)."""

    backoff_max_s: float = Field(10.0, ge=0)
    """Upper bound of one backoff sleep."""

    retry_after_max_s: float = Field(60.0, ge=0)
    """Upper bound applied to a server's ``Retry-After`` header."""

    retry_statuses: list[int] = Field(default_factory=lambda: [429, 502, 503, 504])
    """HTTP statuses that are retried (add 500 for flaky LLM upstreams). Other 4xx/5xx are never retried."""

    retry_on_timeout: bool = True
    """Whether a timed-out attempt is retried (disable for non-idempotent calls that must not repeat)."""

    pool_limit: int = Field(1024, ge=1)
    """Maximum simultaneous connections of the process-wide pool (per peer for plain ``http://`` peers)."""

    fast_http: bool = True
    """Send plain ``http://`` requests through rewardgym's lean keep-alive HTTP/1.1 transport (about a third
    of aiohttp's CPU per call); ``false`` uses aiohttp for every URL. ``https://`` always uses aiohttp."""
