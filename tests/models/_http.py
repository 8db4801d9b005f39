"""A minimal JSON-over-HTTP client for tests (stdlib only, so it cannot hide adapter behaviour)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


def http_json(url: str, body: dict[str, Any] | None = None, timeout: float = 60.0) -> tuple[int, Any]:
    """``(status, parsed JSON or text)`` of a GET (no body) or POST (JSON body); HTTP errors are returned."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", errors="replace")
