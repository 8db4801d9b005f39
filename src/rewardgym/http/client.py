"""The outbound HTTP client of a server process: pooled, timed out, retried a bounded number of times.

Contract:
- One :class:`HttpClient` per process (a server owns one, created on first use inside its event loop):
  one aiohttp ``ClientSession`` with a keep-alive connection pool and **no cookie jar**
  (``DummyCookieJar``). Cookies are passed per call and the cookies a reply sets are returned in
  :attr:`HttpReply.cookies`, so concurrent sessions never leak into each other.
- Every attempt is bounded by ``connect_timeout_s`` / ``read_timeout_s`` and ``total_timeout_s`` (600 s by
  default: an upstream trickling a byte at a time cannot hold a call for ever). A call makes at most
  ``max_attempts`` attempts.
- A reply body larger than ``max_reply_bytes`` (32 MiB by default; counted after any content decoding, so a
  gzip bomb is cut off too) fails the call with
  :class:`~rewardgym.http.errors.UpstreamReplyTooLarge` at once, without a retry; neither transport
  buffers more than the limit.
- Retried: connection errors (refused, reset, server disconnected), timeouts (unless
  ``retry_on_timeout=False``) and the statuses of ``retry_statuses`` (default 429, 502, 503, 504). The
  sleep before attempt *n+1* is full-jitter exponential backoff ``uniform(0, min(max, base * 2**n))``, or
  the server's ``Retry-After`` (seconds or HTTP-date, capped at ``retry_after_max_s``) when it sent one
  (:mod:`rewardgym.http.retry`, the same timing the collector uses).
  Nothing else is retried; in particular other 4xx are final.
- Failures are raised as :class:`~rewardgym.http.errors.UpstreamHTTPError` (non-2xx, when
  ``raise_for_status``), :class:`~rewardgym.http.errors.UpstreamTimeout` or
  :class:`~rewardgym.http.errors.UpstreamConnectionError`; a server app maps them to 502/504.
- Bodies are sent as given (``data=`` bytes) or serialised with orjson (``json=``); replies are read whole
  into bytes (``HttpReply.json()`` parses with orjson).
- Transport: plain ``http://`` URLs go through the lean keep-alive transport of
  :mod:`rewardgym.http.h1pool` (every hop between our own servers, and local vLLM / llama.cpp; a peer
  hosted by this same process, ``colocate: true``, is reached through :mod:`rewardgym.http.local`, no
  socket, same request, reply, errors and retries);
  ``https://`` URLs — and every URL when ``fast_http`` is off — go through aiohttp. Both give the same
  replies, errors and retries, and send header values as the same (UTF-8) bytes.
- Headers: the client's fixed ``headers`` are validated once at construction
  (:func:`rewardgym.protocol.headers.check_headers`: a CR/LF or another control character in a value is a
  :class:`~rewardgym.errors.ConfigError`). A per-call header that still carries one is refused by either
  transport before anything is sent: a final :class:`~rewardgym.http.errors.UpstreamConnectionError`
  naming the header, never its value.
- Replicas: with a :class:`~rewardgym.http.balancer.Router`, a URL whose base is an instance's first
  replica is sent, attempt by attempt, to the replica the router picks (least outstanding requests,
  session affinity by the cookies sent and set, no calls to a replica marked down). A connection error
  marks the replica down and the next attempt goes elsewhere at once (no backoff sleep when another
  replica is live); a sticky session whose replica is down fails at once as a final
  :class:`~rewardgym.http.errors.UpstreamConnectionError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

import orjson

from rewardgym.http import deadline
from rewardgym.http.balancer import ReplicaDown, Router, affinity_keys
from rewardgym.http.config import HttpClientConfig
from rewardgym.http.h1pool import (
    H1ConnectError,
    H1Disconnected,
    H1HeaderError,
    H1Pool,
    H1ProtocolError,
    H1ReplyTooLarge,
    Target,
)
from rewardgym.http.reply import HttpReply, cookie_header, decompress, parse_set_cookies, too_large
from rewardgym.http.retry import parse_retry_after, retry_delay
from rewardgym.protocol.headers import check_headers, header_problem

if TYPE_CHECKING:  # aiohttp is imported on first use: servers that never call out start faster
    import aiohttp

from rewardgym.http.errors import (
    UnsendableRequest,
    UpstreamConnectionError,
    UpstreamHTTPError,
    UpstreamProtocolError,
    UpstreamTimeout,
)

__all__ = ["JSON_HEADERS", "HttpClient", "HttpReply", "cookie_header", "parse_set_cookies"]

JSON_HEADERS = {"Content-Type": "application/json"}


class HttpClient:
    """Pooled aiohttp client with bounded retries; see the module docstring for the contract."""

    def __init__(
        self,
        config: HttpClientConfig | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        router: Router | None = None,
    ):
        self.config = config or HttpClientConfig()
        self.router = router if router else None
        self._headers = check_headers(headers or {}, "HTTP client headers")
        self._session: aiohttp.ClientSession | None = None
        self._retry_statuses = frozenset(self.config.retry_statuses)
        self._timeout: aiohttp.ClientTimeout | None = None
        self._h1: H1Pool | None = None

    def _get_h1(self) -> H1Pool:
        if self._h1 is None:
            config = self.config
            self._h1 = H1Pool(
                limit=config.pool_limit,
                connect_timeout_s=config.connect_timeout_s,
                read_timeout_s=config.read_timeout_s,
                total_timeout_s=config.total_timeout_s,
                max_reply_bytes=config.max_reply_bytes,
            )
        return self._h1

    def _get_session(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._timeout is None:
            self._timeout = aiohttp.ClientTimeout(
                total=self.config.total_timeout_s,
                sock_connect=self.config.connect_timeout_s,
                sock_read=self.config.read_timeout_s,
            )
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self.config.pool_limit, limit_per_host=0, keepalive_timeout=15.0
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                timeout=self._timeout,
                raise_for_status=False,
            )
        return self._session

    async def close(self) -> None:
        if self._h1 is not None:
            await self._h1.close()
            self._h1 = None
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def post(self, url: str, **kwargs: Any) -> HttpReply:
        return await self.request("POST", url, **kwargs)

    async def get(self, url: str, **kwargs: Any) -> HttpReply:
        return await self.request("GET", url, **kwargs)

    async def request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        data: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        cookies: Mapping[str, str] | None = None,
        raise_for_status: bool = True,
        retry_statuses: Collection[int] | None = None,
        max_attempts: int | None = None,
        timeout_s: float | None = None,
    ) -> HttpReply:
        """Send one request (retrying as the policy allows) and return the complete reply.

        ``retry_statuses``/``max_attempts`` override the client policy for this call; ``timeout_s`` bounds
        each attempt as a whole (e.g. a short liveness probe).
        """
        try:
            body = orjson.dumps(json) if json is not None else data
        except TypeError as exc:  # e.g. an integer beyond 64 bits in a free-form field of the caller's body
            raise UnsendableRequest(url, f"request body cannot be sent on: {exc}") from None
        send_headers: dict[str, str] = (
            {**self._headers, **JSON_HEADERS} if body is not None else dict(self._headers)
        )
        if headers:
            send_headers.update(headers)
        if cookies:
            send_headers["Cookie"] = cookie_header(cookies)
        if deadline.current() is not None:  # the caller's deadline goes on with every request made for it
            send_headers[deadline.HEADER] = f"{deadline.current():.3f}"
        statuses = self._retry_statuses if retry_statuses is None else frozenset(retry_statuses)
        attempts = max_attempts or self.config.max_attempts
        send = self._send_h1 if self.config.fast_http and Target.supported(url) else self._send_aiohttp
        failure: Exception | None = None
        routed = self.router.route(url) if self.router is not None else None
        for attempt in range(1, attempts + 1):
            after: float | None = None
            switched = False
            target, replica = url, ""
            if routed is not None:
                try:
                    replica = routed[0].acquire(affinity_keys(cookies))
                except ReplicaDown as exc:
                    raise UpstreamConnectionError(url, str(exc), final=True) from None
                target = replica + routed[1]
            left = deadline.remaining()
            if left is not None and left <= 0:
                if routed is not None:
                    routed[0].release(replica)
                raise failure or UpstreamTimeout(url, "the caller's deadline passed (X-Rewardgym-Deadline)")
            attempt_timeout = timeout_s if left is None else min(timeout_s or left, left)
            try:
                reply = await send(method, target, body, send_headers, attempt_timeout, attempt)
            except (UpstreamTimeout, UpstreamConnectionError, UpstreamProtocolError) as exc:
                if routed is not None and isinstance(exc, UpstreamConnectionError) and not exc.final:
                    routed[0].mark_down(replica)
                    switched = bool(routed[0].live())
                if exc.final:
                    raise exc from None
                failure = exc
            else:
                if routed is not None:
                    routed[0].mark_up(replica)
                    if reply.cookies:
                        routed[0].bind(reply.cookies, replica)
                if reply.status in statuses and attempt < attempts:
                    after = parse_retry_after(reply.headers.get("Retry-After"))
                    failure = UpstreamHTTPError(url, reply.status, reply.body, retry_after=after)
                elif raise_for_status and not reply.ok:
                    after = parse_retry_after(reply.headers.get("Retry-After"))
                    raise UpstreamHTTPError(url, reply.status, reply.body, retry_after=after)
                else:
                    return reply
            finally:
                if routed is not None:
                    routed[0].release(replica)
            if attempt < attempts and not switched:
                config = self.config
                await asyncio.sleep(
                    retry_delay(
                        attempt,
                        base_s=config.backoff_base_s,
                        max_s=config.backoff_max_s,
                        retry_after_s=after,
                        retry_after_max_s=config.retry_after_max_s,
                    )
                )
        assert failure is not None
        raise failure

    async def _send_h1(
        self, method: str, url: str, body: bytes | None, headers: dict[str, str], timeout_s: float | None,
        attempt: int,
    ) -> HttpReply:  # fmt: skip
        try:
            raw = await self._get_h1().request(method, url, body, headers, total_timeout_s=timeout_s)
        except TimeoutError:
            failure = UpstreamTimeout(url, f"no reply within the timeout ({method}, attempt {attempt})")
            failure.final = not self.config.retry_on_timeout
            raise failure from None
        except H1HeaderError as exc:
            raise UpstreamConnectionError(url, str(exc), final=True) from None
        except ValueError:
            raise UpstreamConnectionError(url, "invalid URL", final=True) from None
        except H1ConnectError as exc:
            raise UpstreamConnectionError(url, str(exc), dns_failure=exc.dns_failure) from None
        except H1Disconnected as exc:
            raise UpstreamConnectionError(url, f"ServerDisconnectedError: {exc}") from None
        except H1ReplyTooLarge:
            raise too_large(url, self.config.max_reply_bytes) from None
        except H1ProtocolError as exc:
            raise UpstreamProtocolError(url, str(exc)) from None
        body = raw.body
        encoding = raw.headers.get("content-encoding")
        if encoding and encoding != "identity":  # we never ask for it, but some proxies compress anyway
            body = decompress(url, body, encoding, self.config.max_reply_bytes)
        return HttpReply(url, raw.status, body, parse_set_cookies(raw.set_cookies), raw.headers)

    async def _send_aiohttp(
        self, method: str, url: str, body: bytes | None, headers: dict[str, str], timeout_s: float | None,
        attempt: int,
    ) -> HttpReply:  # fmt: skip
        import aiohttp

        session = self._get_session()
        timeout = self._timeout
        if timeout_s is not None:
            timeout = aiohttp.ClientTimeout(total=timeout_s, sock_connect=min(timeout_s, 5.0))
        try:
            async with session.request(method, url, data=body, headers=headers, timeout=timeout) as resp:
                payload = await self._read_capped(url, resp)
                return HttpReply(
                    url=url,
                    status=resp.status,
                    body=payload,
                    cookies=parse_set_cookies(resp.headers.getall("Set-Cookie", ())),
                    headers=resp.headers,
                )
        except TimeoutError:
            failure = UpstreamTimeout(url, f"no reply within the timeout ({method}, attempt {attempt})")
            failure.final = not self.config.retry_on_timeout
            raise failure from None
        except aiohttp.InvalidURL:
            raise UpstreamConnectionError(url, "invalid URL", final=True) from None
        except ValueError as exc:
            if "header" not in str(exc).lower():
                raise
            # aiohttp's own refusal of a control character in a header (its message may quote the value)
            bad = [name for name, value in headers.items() if header_problem(name, value)]
            what = f"request header {bad[0]!r}" if bad else "a request header"
            raise UpstreamConnectionError(
                url, f"{what} contains a control character; not sent", final=True
            ) from None
        except aiohttp.ClientConnectorDNSError as exc:
            raise UpstreamConnectionError(url, f"cannot resolve host: {exc}", dns_failure=True) from None
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            raise UpstreamConnectionError(url, f"{type(exc).__name__}: {exc}") from None
        except aiohttp.ClientResponseError as exc:  # malformed HTTP from the peer
            raise UpstreamProtocolError(url, f"{type(exc).__name__}: {exc.message}") from None

    async def _read_capped(self, url: str, resp: aiohttp.ClientResponse) -> bytes:
        """The whole (decoded) body, refused as soon as it passes ``max_reply_bytes``."""
        limit = self.config.max_reply_bytes
        if (
            resp.content_length is not None
            and resp.content_length > limit
            and not resp.headers.get("Content-Encoding")
        ):
            raise too_large(url, limit)
        chunks: list[bytes] = []
        size = 0
        async for chunk in resp.content.iter_chunked(1 << 16):
            size += len(chunk)
            if size > limit:
                resp.close()  # drop the connection: the rest of the body is never read
                raise too_large(url, limit)
            chunks.append(chunk)
        return b"".join(chunks)
