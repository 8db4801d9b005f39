"""The one retry timing (rewardgym.http.retry), shared by the servers' outbound client and the collector."""

from __future__ import annotations

import random
import time
from email.utils import formatdate

from hypothesis import given
from hypothesis import strategies as st

from rewardgym.collect.failures import AttemptFailure, FailureClass, RetryPolicy
from rewardgym.http.retry import backoff_delay, parse_retry_after, retry_delay


def test_retry_after_parsing() -> None:
    now = time.time()
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("") is None
    assert parse_retry_after("soon") is None
    http_date = formatdate(now + 30, usegmt=True)
    assert 28 <= (parse_retry_after(http_date, now=now) or 0) <= 31
    assert parse_retry_after(formatdate(now - 30, usegmt=True), now=now) == 0.0


@given(st.integers(min_value=1, max_value=40))
def test_backoff_is_full_jitter_and_capped(attempt: int) -> None:
    delay = backoff_delay(attempt, 0.1, 2.0)
    assert 0.0 <= delay <= min(2.0, 0.1 * 2 ** (attempt - 1))


def test_retry_after_wins_over_backoff_and_is_capped() -> None:
    assert retry_delay(1, base_s=5.0, max_s=5.0, retry_after_s=0.25, retry_after_max_s=60.0) == 0.25
    assert retry_delay(1, base_s=0.1, max_s=1.0, retry_after_s=600.0, retry_after_max_s=60.0) == 60.0
    assert 0.0 <= retry_delay(3, base_s=0.1, max_s=1.0, retry_after_s=None, retry_after_max_s=60.0) <= 0.4


@given(st.integers(min_value=1, max_value=12), st.integers(min_value=0, max_value=2**32))
def test_collector_policy_uses_the_shared_timing(attempt: int, seed: int) -> None:
    """The collector's delay is exactly the shared backoff drawn from the same random stream."""
    policy = RetryPolicy(max_attempts=5, base_delay_s=0.5, max_delay_s=30.0)
    failure = AttemptFailure(FailureClass.HTTP_5XX, "boom")
    expected = backoff_delay(attempt, 0.5, 30.0, random.Random(seed))
    assert policy.delay(attempt, failure, random.Random(seed)) == expected
    waited = AttemptFailure(FailureClass.RATE_LIMITED, "slow down", status=429, retry_after_s=90.0)
    assert policy.delay(attempt, waited, random.Random(seed)) == 30.0
