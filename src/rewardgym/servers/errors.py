"""Errors raised inside server handlers, and how each maps to an HTTP status.

Contract:
- :class:`ApiError` is what a handler raises to answer with a given 4xx/5xx status and message.
- :class:`JudgeError`: a verifier's external judge could not be used (answered 200 with reward 0 and a
  failure class, see its docstring).
- The errors of outbound calls (``Upstream*``, answered 502/504/400/500) live in
  :mod:`rewardgym.http.errors`.
"""

from __future__ import annotations


class ApiError(Exception):
    """A handler's deliberate error answer: HTTP ``status`` with ``{"error": {type, message}}``."""

    def __init__(
        self, status: int, message: str, *, kind: str = "bad_request", headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.headers = headers or {}
        self.status = status
        self.kind = kind
        self.message = message


class JudgeError(Exception):
    """A verifier's external judge could not be used (transport, timeout, auth, non-2xx).

    ``/verify`` answers it with HTTP 200, ``reward: 0.0`` and ``_ng_failure_class: "judge_failed"`` so the
    collector sends the row to the failures sidecar instead of counting a fabricated reward.
    """
