"""Start-up probes of the supervisor: does a server listen, and does an endpoint answer HTTP at all?

They use the standard library only (``asyncio`` sockets and ``http.client`` in a worker thread), so the
supervisor does not load aiohttp — whose import builds TLS contexts — while the children boot on the same
cores.

Contract:
- :func:`listening` is true when a TCP connection to ``host:port`` is accepted (refused, unreachable or
  timed out → false). A uvicorn server listens only after its lifespan start-up has completed.
- :func:`http_status` sends one ``GET`` (no retries, no redirects followed, ``Connection: close``) and returns
  the status code, whatever it is. Failures raise :class:`~rewardgym.http.errors.UpstreamTimeout` or
  :class:`~rewardgym.http.errors.UpstreamConnectionError` (``dns_failure=True`` when the host name does not
  resolve), naming the URL without credentials or query.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from urllib.parse import urlsplit

from rewardgym.http.errors import UpstreamConnectionError, UpstreamTimeout


async def listening(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """Whether ``host:port`` accepts a TCP connection within ``timeout_s``."""
    try:
        _reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


def _get_status(url: str, timeout_s: float) -> int:
    import http.client

    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        raise UpstreamConnectionError(url, "invalid URL") from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(host, port, timeout=timeout_s)
    elif parts.scheme == "http":
        conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    else:
        raise UpstreamConnectionError(url, f"unsupported URL scheme {parts.scheme!r}")
    try:
        conn.request("GET", path, headers={"Connection": "close"})
        return conn.getresponse().status
    except socket.gaierror as exc:
        raise UpstreamConnectionError(url, f"cannot resolve host: {exc}", dns_failure=True) from None
    except TimeoutError:
        raise UpstreamTimeout(url, f"no reply within {timeout_s:g} s") from None
    except (OSError, http.client.HTTPException) as exc:
        raise UpstreamConnectionError(url, f"{type(exc).__name__}: {exc}") from None
    finally:
        conn.close()


async def http_status(url: str, timeout_s: float) -> int:
    """The status of one ``GET url`` (see the module docstring)."""
    return await asyncio.to_thread(_get_status, url, timeout_s)
