"""HTTP client of the agents' ``/run`` endpoint, turning every way a rollout can fail into a class.

One pooled aiohttp session (keep-alive, no cookie jar) serves every rollout. A successful answer must be a
JSON object with a numeric ``reward``: anything else is a failure (``invalid_response``), never a reward.
A result that carries ``_ng_failure_class`` (e.g. a judge that failed) is a failure of that class.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from typing import Any

import aiohttp
import orjson

from rewardgym.collect.failures import AttemptFailure, FailureClass, classify_status, parse_retry_after
from rewardgym.protocol import keys

_REASON_CHARS = 500


def _short(text: str) -> str:
    return text if len(text) <= _REASON_CHARS else text[:_REASON_CHARS] + "…"


class AgentClient:
    """Posts rows to ``<url of the row's agent><path>`` (``/run``; ``/verify`` of a resources server for
    reverify, where the map sends each agent name to its resources server's URL)."""

    def __init__(
        self,
        agent_urls: Mapping[str, str],
        *,
        rollout_timeout_s: float,
        connect_timeout_s: float = 10.0,
        max_connections: int = 256,
        headers: Mapping[str, str] | None = None,
        path: str = "/run",
    ) -> None:
        self._urls = {name: url.rstrip("/") + path for name, url in agent_urls.items()}
        self._timeout = aiohttp.ClientTimeout(total=rollout_timeout_s, connect=connect_timeout_s)
        self._max_connections = max_connections
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> AgentClient:
        connector = aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=0, keepalive_timeout=60)
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            json_serialize=lambda o: orjson.dumps(o).decode(),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def run(self, row: dict[str, Any]) -> dict[str, Any]:
        """One attempt; raises :class:`AttemptFailure` on any failure."""
        if self._session is None:
            raise RuntimeError("AgentClient used outside 'async with'")
        ref = row.get(keys.AGENT_REF) or {}
        url = self._urls.get(ref.get("name", ""))
        if url is None:
            raise AttemptFailure(FailureClass.UNKNOWN_AGENT, f"no running agent named {ref.get('name')!r}")
        try:
            async with self._session.post(
                url, data=orjson.dumps(row), headers=self._headers, timeout=self._timeout
            ) as response:
                body = await response.read()
                status = response.status
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
        except TimeoutError:
            raise AttemptFailure(
                FailureClass.TIMEOUT, f"no answer from {url} within the rollout timeout"
            ) from None
        except aiohttp.ClientConnectionError as exc:
            raise AttemptFailure(FailureClass.CONNECTION, f"{type(exc).__name__}: {exc}") from None
        except aiohttp.ClientPayloadError as exc:
            raise AttemptFailure(FailureClass.CONNECTION, f"response cut short: {exc}") from None
        except asyncio.CancelledError:
            raise
        text = body.decode("utf-8", errors="replace")
        if status >= 300:
            failure_class = classify_status(status, text)
            raise AttemptFailure(failure_class, f"HTTP {status}: {_short(text)}", status, retry_after)
        return _validate_result(body, text)


def _validate_result(body: bytes, text: str) -> dict[str, Any]:
    try:
        result = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise AttemptFailure(
            FailureClass.INVALID_RESPONSE, f"agent answered non-JSON: {_short(text)}"
        ) from None
    if not isinstance(result, dict):
        raise AttemptFailure(FailureClass.INVALID_RESPONSE, "agent answered JSON that is not an object")
    marked = result.get(keys.FAILURE_CLASS)
    if marked:
        try:
            failure_class = FailureClass(str(marked))
        except ValueError:
            failure_class = FailureClass.VERIFIER_ERROR
        detail = next(
            (str(v) for k, v in result.items() if k.startswith("_ng_failure_") and k != keys.FAILURE_CLASS),
            "",
        )
        raise AttemptFailure(failure_class, f"agent reported {marked}: {_short(detail)}")
    reward = result.get(keys.REWARD)
    if isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward):
        raise AttemptFailure(
            FailureClass.INVALID_RESPONSE, f"result has no finite numeric reward (got {reward!r})"
        )
    return result
