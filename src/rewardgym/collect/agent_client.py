"""HTTP client of the agents' ``/run`` endpoint, turning every way a rollout can fail into a class.

One keep-alive connection pool serves every rollout: the lean HTTP/1.1 transport of
:mod:`rewardgym.http.h1pool` for ``http://`` agents (the normal case, the servers are ours), an aiohttp
session (no cookie jar) for ``https://``. A successful answer must be a JSON object with a numeric
``reward``: anything else is a failure (``invalid_response``), never a reward.
A result that carries ``_ng_failure_class`` (e.g. a judge that failed) is a failure of that class.

An agent with several replicas (``replicas``: name → every replica's base URL) gets each attempt sent to the
replica with the fewest rollouts outstanding; a replica that refuses or drops the connection is marked down
(:mod:`rewardgym.http.balancer`), so the collector's retry of that rollout goes to a live one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from rewardgym.collect.failures import AttemptFailure, FailureClass, classify_status
from rewardgym.config.secrets import redact_text
from rewardgym.http import deadline
from rewardgym.http.balancer import Replicas
from rewardgym.http.errors import error_message
from rewardgym.http.h1pool import H1ConnectError, H1Disconnected, H1Pool, H1ProtocolError, Target
from rewardgym.http.retry import parse_retry_after
from rewardgym.protocol import keys
from rewardgym.protocol.headers import check_headers

if TYPE_CHECKING:  # aiohttp is imported on first use: only https:// agents need it
    import aiohttp

_REASON_CHARS = 500


def _short(text: str) -> str:
    """A failure reason: secrets masked (in any encoding) first, then cut — a cut never splits a secret."""
    text = redact_text(text)
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
        replicas: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self._urls = {name: url.rstrip("/") + path for name, url in agent_urls.items()}
        self._path = path
        self.replicas = {
            name: Replicas(urls)
            for name, urls in (replicas or {}).items()
            if len(urls) > 1 and name in self._urls
        }
        """The agents with several replicas, and how their rollouts were spread."""
        self._connect_timeout_s = connect_timeout_s
        self._rollout_timeout_s = rollout_timeout_s
        self._max_connections = max_connections
        # Validated once here (a CR/LF in the shared token would otherwise inject a header on every call).
        self._headers = check_headers({"Content-Type": "application/json", **(headers or {})}, "headers")
        self._session: aiohttp.ClientSession | None = None
        self._entered = False
        # The rollout timeout bounds each attempt as a whole; reads are not bounded separately.
        self._h1 = H1Pool(
            limit=max_connections,
            connect_timeout_s=connect_timeout_s,
            read_timeout_s=None,
            total_timeout_s=rollout_timeout_s,
        )

    async def __aenter__(self) -> AgentClient:
        self._entered = True
        return self

    def _aiohttp_session(self) -> aiohttp.ClientSession:
        """The aiohttp session of ``https://`` agents, made on first use (most runs never need aiohttp)."""
        import aiohttp

        if self._session is None:
            connector = aiohttp.TCPConnector(
                limit=self._max_connections, limit_per_host=0, keepalive_timeout=60
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                json_serialize=lambda o: orjson.dumps(o).decode(),
            )
        return self._session

    async def __aexit__(self, *exc: object) -> None:
        self._entered = False
        await self._h1.close()
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def run(self, row: dict[str, Any]) -> dict[str, Any]:
        """One attempt; raises :class:`AttemptFailure` on any failure."""
        if not self._entered:
            raise RuntimeError("AgentClient used outside 'async with'")
        ref = row.get(keys.AGENT_REF) or {}
        name = ref.get("name", "")
        url = self._urls.get(name)
        if url is None:
            raise AttemptFailure(FailureClass.UNKNOWN_AGENT, f"no running agent named {ref.get('name')!r}")
        group = self.replicas.get(name)
        if group is None:
            body, status, retry_after = await self._post(url, row)
        else:
            replica = group.acquire()
            try:
                body, status, retry_after = await self._post(replica + self._path, row)
            except AttemptFailure as failure:
                if failure.failure_class is FailureClass.CONNECTION:
                    group.mark_down(replica)
                raise
            finally:
                group.release(replica)
            group.mark_up(replica)
        if status >= 300:
            text = body.decode("utf-8", errors="replace")
            failure_class = classify_status(status, text)
            if failure_class is FailureClass.UPSTREAM_AUTH:  # the upstream's own words, not our wrapping
                reason = error_message(body) or f"HTTP {status}: {_short(text)}"
                raise AttemptFailure(failure_class, _short(reason), status)
            # The innermost message once (our servers answer {"error": {"message": …}}), not escaped JSON.
            reason = error_message(body) or text
            raise AttemptFailure(failure_class, f"HTTP {status}: {_short(reason)}", status, retry_after)
        return _validate_result(body)

    def _attempt_headers(self) -> dict[str, str]:
        """The headers of one attempt: with the time past which this attempt no longer waits, so that no
        server keeps working, nor its upstream connection open, for it (:mod:`rewardgym.http.deadline`)."""
        return {**self._headers, deadline.HEADER: deadline.header_value(self._rollout_timeout_s)}

    async def _post(self, url: str, row: dict[str, Any]) -> tuple[bytes, int, float | None]:
        if Target.supported(url):
            return await self._post_h1(url, row)
        return await self._post_aiohttp(url, row)

    async def _post_h1(self, url: str, row: dict[str, Any]) -> tuple[bytes, int, float | None]:
        try:
            reply = await self._h1.request("POST", url, orjson.dumps(row), self._attempt_headers())
        except TimeoutError:
            raise AttemptFailure(
                FailureClass.TIMEOUT, f"no answer from {url} within the rollout timeout"
            ) from None
        except (H1ConnectError, H1Disconnected) as exc:
            raise AttemptFailure(FailureClass.CONNECTION, str(exc)) from None
        except H1ProtocolError as exc:  # garbage on the wire: like a broken connection, worth a retry
            raise AttemptFailure(FailureClass.CONNECTION, str(exc)) from None
        return reply.body, reply.status, parse_retry_after(reply.headers.get("Retry-After"))

    async def _post_aiohttp(self, url: str, row: dict[str, Any]) -> tuple[bytes, int, float | None]:
        import aiohttp

        session = self._aiohttp_session()
        timeout = aiohttp.ClientTimeout(total=self._rollout_timeout_s, connect=self._connect_timeout_s)
        try:
            async with session.post(
                url, data=orjson.dumps(row), headers=self._attempt_headers(), timeout=timeout
            ) as response:
                return (
                    await response.read(),
                    response.status,
                    parse_retry_after(response.headers.get("Retry-After")),
                )
        except TimeoutError:
            raise AttemptFailure(
                FailureClass.TIMEOUT, f"no answer from {url} within the rollout timeout"
            ) from None
        except aiohttp.ClientConnectionError as exc:
            raise AttemptFailure(FailureClass.CONNECTION, f"{type(exc).__name__}: {exc}") from None
        except aiohttp.ClientPayloadError as exc:
            raise AttemptFailure(FailureClass.CONNECTION, f"response cut short: {exc}") from None


def _validate_result(body: bytes) -> dict[str, Any]:
    try:
        result = orjson.loads(body)
    except orjson.JSONDecodeError:
        text = body.decode("utf-8", errors="replace")
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
        response = result.get(keys.RESPONSE) if failure_class is FailureClass.JUDGE_FAILED else None
        raise AttemptFailure(failure_class, f"agent reported {marked}: {_short(detail)}", response=response)
    reward = result.get(keys.REWARD)
    if isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward):
        raise AttemptFailure(
            FailureClass.INVALID_RESPONSE, f"result has no finite numeric reward (got {reward!r})"
        )
    return result
