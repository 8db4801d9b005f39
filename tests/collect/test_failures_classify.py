"""How a non-2xx ``/run`` answer is classified (the body is the agent's JSON error)."""

from __future__ import annotations

import pytest

from rewardgym.collect.failures import TRANSIENT, FailureClass, classify_status


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (429, "{}", FailureClass.RATE_LIMITED),
        (504, "{}", FailureClass.TIMEOUT),
        (502, '{"error":{"type":"upstream_http_error","message":"model: HTTP 500"}}', FailureClass.HTTP_5XX),
        (
            502,
            '{"error":{"type":"verifier_error","message":"verify failed: HTTP 500"}}',
            FailureClass.VERIFIER_ERROR,
        ),
        (
            # Classified by its type, not its wording: a model failure that mentions "verify" is a 5xx.
            502,
            '{"error":{"type":"upstream_http_error","message":"model: HTTP 500: cannot verify tls"}}',
            FailureClass.HTTP_5XX,
        ),
        (
            504,
            '{"error":{"type":"verifier_error","message":"verify failed: timed out"}}',
            FailureClass.TIMEOUT,
        ),
        (500, '{"error":{"type":"upstream_auth_error","message":"HTTP 401"}}', FailureClass.UPSTREAM_AUTH),
        (422, '{"error":{"type":"validation_error"}}', FailureClass.INVALID_REQUEST),
    ],
)
def test_classify_status(status: int, body: str, expected: FailureClass) -> None:
    assert classify_status(status, body) is expected


def test_a_refused_key_is_not_retried() -> None:
    assert FailureClass.UPSTREAM_AUTH not in TRANSIENT
