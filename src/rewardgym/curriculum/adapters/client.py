"""A synchronous client of ``gym curriculum serve``: the adapters' two calls (and ``state``) over HTTP.

Contract:

- ``CurriculumClient(url, token=None, timeout_s=60)`` speaks the service's API (``POST /next_batch``,
  ``POST /report``, ``GET /state``) with the standard library only, so it runs inside any trainer process
  (no event loop). It is a :class:`~rewardgym.curriculum.adapters.source.BatchSource` and a
  :class:`~rewardgym.curriculum.adapters.source.GroupReporter`: every adapter takes it in place of an
  in-process :class:`~rewardgym.curriculum.Curriculum` — for trainers whose prompt loader and rewards
  live in different processes, or several trainers on one service.
- The token travels in ``X-Rewardgym-Token`` only; no message, ``repr`` or error carries it.
- No call is retried (a repeated report would be a duplicate). A refused call (HTTP 4xx: unknown task,
  duplicate report, bad reward, bad token) is a :class:`~rewardgym.errors.DataError` with the service's
  one-line message; an unreachable service or a reply that is not the API's is a
  :class:`~rewardgym.errors.ServerError` naming the URL.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterable
from typing import Any

import orjson

from rewardgym.errors import DataError, ServerError, UsageError


class CurriculumClient:
    """See the module docstring."""

    def __init__(self, url: str, token: str | None = None, timeout_s: float = 60.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise UsageError(
                f"curriculum client: the service URL must start with http:// or https://: {url!r}"
            )
        self.url = url.rstrip("/")
        self._headers = {"Content-Type": "application/json"}
        if token:
            self._headers["X-Rewardgym-Token"] = token
        self.timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"CurriculumClient({self.url!r})"

    def next_batch(self, n: int, group_size: int | None = None) -> list[dict[str, Any]]:
        body: dict[str, Any] = {"n": n} if group_size is None else {"n": n, "group_size": group_size}
        rows = self._call("/next_batch", body).get("rows")
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise ServerError(f"curriculum service {self.url}/next_batch: the reply is not a batch of rows")
        return rows

    def report(self, task_index: int, rewards: Iterable[float]) -> bool:
        return self.report_groups([(task_index, rewards)])[0]

    def report_groups(self, groups: Iterable[tuple[int, Iterable[float]]]) -> list[bool]:
        body = {
            "groups": [{"task_index": int(task), "rewards": [float(r) for r in rs]} for task, rs in groups]
        }
        if not body["groups"]:
            return []
        informative = self._call("/report", body).get("informative")
        if not isinstance(informative, list) or len(informative) != len(body["groups"]):
            raise ServerError(f"curriculum service {self.url}/report: the reply is not one flag per group")
        return [bool(flag) for flag in informative]

    def state(self, offset: int = 0, limit: int = 1000) -> dict[str, Any]:
        return self._call(f"/state?offset={int(offset)}&limit={int(limit)}", None)

    def _call(self, path: str, body: Any) -> dict[str, Any]:
        url = f"{self.url}{path}"
        where = f"{self.url}{path.partition('?')[0]}"
        data = None if body is None else orjson.dumps(body)
        request = urllib.request.Request(
            url, data=data, headers=self._headers, method="GET" if body is None else "POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as reply:
                raw = reply.read()
        except urllib.error.HTTPError as exc:
            raise DataError(f"curriculum service {where}: HTTP {exc.code}: {_message(exc)}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ServerError(f"curriculum service {where}: not reachable ({reason})") from None
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict):
            raise ServerError(f"curriculum service {where}: the reply is not a JSON object")
        return answer


def _message(exc: urllib.error.HTTPError) -> str:
    """The service's one-line error message (``{"error": {"message"}}``), else the status text."""
    try:
        error = orjson.loads(exc.read()).get("error")
    except (orjson.JSONDecodeError, AttributeError, OSError):
        error = None
    message = error.get("message") if isinstance(error, dict) else None
    return str(message) if message else str(exc.reason)
