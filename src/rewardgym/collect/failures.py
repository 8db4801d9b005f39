"""Classification of failed rollouts and the retry policy.

A failure is never written to the rollouts file and never gets a reward. Each failed attempt is classified
by its status and its error ``type`` (:func:`rewardgym.http.errors.error_kind`), never by the wording of
its body. *Transient* classes are retried in place with exponential backoff and full jitter (honouring
``Retry-After``; the timing is :mod:`rewardgym.http.retry`, shared with the servers' client), *permanent*
ones (a request no retry can fix) are not. When the attempts run out the rollout goes to
``<stem>_failures.jsonl`` with its class and reason. ``upstream_auth`` (a model upstream refused the API
key) is neither: it stops the whole run and the rollout is left for ``--resume``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rewardgym.http.errors import UPSTREAM_AUTH_KIND, UPSTREAM_REJECTED_KIND, VERIFIER_ERROR_KIND, error_kind
from rewardgym.http.retry import retry_delay


class FailureClass(StrEnum):
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    HTTP_5XX = "http_5xx"
    HTTP_4XX = "http_4xx"
    """A model upstream rejected the request itself (HTTP 4xx other than 401/403/408/429): not retried."""
    RATE_LIMITED = "rate_limited"
    VERIFIER_ERROR = "verifier_error"
    JUDGE_FAILED = "judge_failed"
    INVALID_REQUEST = "invalid_request"
    INVALID_RESPONSE = "invalid_response"
    UNKNOWN_AGENT = "unknown_agent"
    UPSTREAM_AUTH = "upstream_auth"
    """A model (or judge) upstream refused the server's credentials: every rollout would fail the same way,
    so the run stops at the first one (left for ``--resume`` once the key is fixed, not recorded)."""


TRANSIENT = frozenset(
    {
        FailureClass.TIMEOUT,
        FailureClass.CONNECTION,
        FailureClass.HTTP_5XX,
        FailureClass.RATE_LIMITED,
        FailureClass.VERIFIER_ERROR,
        FailureClass.JUDGE_FAILED,
        FailureClass.INVALID_RESPONSE,
    }
)


@dataclass(frozen=True)
class AttemptFailure(Exception):
    """One failed attempt of one rollout."""

    failure_class: FailureClass
    reason: str
    status: int | None = None
    retry_after_s: float | None = None
    response: Any = None
    """The episode's response when the agent answered one (a judge that failed: the response is there to
    re-score with ``gym eval reverify --judge-failed-only``)."""

    @property
    def transient(self) -> bool:
        return self.failure_class in TRANSIENT

    def __str__(self) -> str:
        return f"{self.failure_class.value}: {self.reason}"


def classify_status(status: int, body: str) -> FailureClass:
    """Failure class of a non-2xx ``/run`` answer."""
    kind = error_kind(body)
    if kind == UPSTREAM_AUTH_KIND:  # the error type our servers give a refused upstream key
        return FailureClass.UPSTREAM_AUTH
    if kind == UPSTREAM_REJECTED_KIND and 400 <= status < 500:
        return FailureClass.HTTP_4XX
    if status == 429:
        return FailureClass.RATE_LIMITED
    if status in (408, 504):
        return FailureClass.TIMEOUT
    if status >= 500:
        return FailureClass.VERIFIER_ERROR if kind == VERIFIER_ERROR_KIND else FailureClass.HTTP_5XX
    return FailureClass.INVALID_REQUEST


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a rollout is retried."""

    max_attempts: int = 3
    """Attempts per rollout, including the first (``++max_attempts``)."""
    base_delay_s: float = 0.5
    """First backoff step; doubles each attempt."""
    max_delay_s: float = 30.0
    """Upper bound of one backoff step (a ``Retry-After`` beyond it is capped too)."""

    def delay(self, attempt: int, failure: AttemptFailure, rng: random.Random) -> float:
        """Seconds before attempt ``attempt + 1`` (``attempt`` counts from 1)."""
        return retry_delay(
            attempt,
            base_s=self.base_delay_s,
            max_s=self.max_delay_s,
            retry_after_s=failure.retry_after_s,
            retry_after_max_s=self.max_delay_s,
            rng=rng,
        )
