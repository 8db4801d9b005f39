"""A tiny independent HTTP/1.1 client for tests (stdlib ``http.client``; no cookie jar, no retries)."""

from __future__ import annotations

import http.client
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson


@dataclass
class Reply:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    @property
    def cookies(self) -> dict[str, str]:
        found = {}
        for key, value in self.headers:
            if key.lower() == "set-cookie":
                name, _, rest = value.split(";", 1)[0].partition("=")
                found[name.strip()] = rest.strip()
        return found


def call(
    base_url: str,
    method: str = "GET",
    path: str = "/",
    *,
    json: Any = None,
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
    cookies: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> Reply:
    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    send = dict(headers or {})
    body = orjson.dumps(json) if json is not None else data
    if body is not None:
        send.setdefault("Content-Type", "application/json")
    if cookies:
        send["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
    try:
        conn.request(method, path, body=body, headers=send)
        resp = conn.getresponse()
        return Reply(resp.status, resp.getheaders(), resp.read())
    finally:
        conn.close()
