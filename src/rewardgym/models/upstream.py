"""Small shared pieces of the model servers that call an LLM upstream over HTTP.

Contract:
- :func:`llm_retry_statuses`: the statuses retried on an LLM upstream — the configured
  ``http.retry_statuses`` (429/502/503/504 by default) **plus 500**, unless the config sets
  ``http.retry_statuses`` explicitly (then exactly those).
- :func:`sticky_index`: the replica a session is pinned to: the first 8 bytes of ``sha256(session_id)``
  read big-endian, modulo the number of replicas (docs/reference/environments.md §2.1). Pure and
  deterministic, so no cache is needed (nor kept: it would grow with every session).
- :func:`upstream_headers`: the extra headers plus ``Authorization: Bearer <key>`` when a key is set. The
  key is read from its :class:`~pydantic.SecretStr` only here; it goes to the upstream and nowhere else.
- :func:`concurrency_limit`: an ``asyncio.Semaphore`` bounding in-flight upstream calls, or a no-op.
- :func:`bad_reply`: an adapter's :class:`~rewardgym.models.errors.UpstreamReplyError` re-raised as the
  server layer's :class:`~rewardgym.http.errors.UpstreamProtocolError` (HTTP 502 naming the upstream URL):
  a reply that is not what the protocol requires is never passed on.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager

from pydantic import SecretStr

from rewardgym.http.config import HttpClientConfig
from rewardgym.http.errors import UpstreamProtocolError

LLM_EXTRA_RETRY_STATUS = 500
"""LLM servers answer 500 on transient failures (e.g. an engine restart); it is retried by default."""


def llm_retry_statuses(http: HttpClientConfig) -> frozenset[int]:
    """Statuses to retry on an LLM upstream (see the module docstring)."""
    statuses = set(http.retry_statuses)
    if "retry_statuses" not in http.model_fields_set:
        statuses.add(LLM_EXTRA_RETRY_STATUS)
    return frozenset(statuses)


def sticky_index(session_id: str, replicas: int) -> int:
    """Index of the replica that serves ``session_id`` (sha256, first 8 bytes big-endian, mod N)."""
    if replicas <= 1:
        return 0
    digest = hashlib.sha256(session_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % replicas


def upstream_headers(api_key: SecretStr | None, extra: Mapping[str, str]) -> dict[str, str]:
    """Headers of every upstream call: ``extra`` plus the bearer token when ``api_key`` is non-empty."""
    headers = dict(extra)
    key = api_key.get_secret_value() if api_key is not None else ""
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def concurrency_limit(limit: int | None) -> AbstractAsyncContextManager[object]:
    """A semaphore admitting ``limit`` concurrent upstream calls (``None``: unbounded)."""
    if limit:
        return asyncio.Semaphore(limit)
    return contextlib.nullcontext()


def bad_reply(url: str, exc: Exception) -> UpstreamProtocolError:
    """The 502 error for an upstream reply the adapter could not use."""
    return UpstreamProtocolError(url, str(exc))
