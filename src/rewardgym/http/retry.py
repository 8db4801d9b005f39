"""When to try an HTTP call again: full-jitter exponential backoff and the server's ``Retry-After``.

The one retry timing of the project, used by the servers' outbound client (:mod:`rewardgym.http.client`)
and by the rollout collector (:mod:`rewardgym.collect.failures`).

Contract:
- :func:`parse_retry_after` reads a ``Retry-After`` header: delta-seconds or an HTTP-date, never negative;
  ``None`` when the header is absent or unreadable.
- :func:`backoff_delay` is full-jitter exponential backoff: before retry number ``attempt`` (1 = first
  retry) it is ``uniform(0, min(max_s, base_s * 2**(attempt - 1)))``.
- :func:`retry_delay` is what a caller sleeps: the server's wait when it sent one (capped at
  ``retry_after_max_s``), the backoff otherwise.
"""

from __future__ import annotations

import random
import time
from email.utils import parsedate_to_datetime


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP-date); ``None`` if absent/bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def backoff_delay(attempt: int, base_s: float, max_s: float, rng: random.Random | None = None) -> float:
    """Full-jitter exponential backoff before retry number ``attempt`` (1 = first retry)."""
    ceiling = min(max_s, base_s * (2 ** (attempt - 1)))
    return (rng or random).uniform(0.0, ceiling)


def retry_delay(
    attempt: int,
    *,
    base_s: float,
    max_s: float,
    retry_after_s: float | None,
    retry_after_max_s: float,
    rng: random.Random | None = None,
) -> float:
    """Seconds before retry number ``attempt``: the server's ``Retry-After`` if it sent one, else backoff."""
    if retry_after_s is not None:
        return min(retry_after_s, retry_after_max_s)
    return backoff_delay(attempt, base_s, max_s, rng)
