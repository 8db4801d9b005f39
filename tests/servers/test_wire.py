"""The lean JSON response (:class:`rewardgym.servers.wire.JsonResponse`) against Starlette's own: every
status class, with and without a body, gives the same status, body and header bytes in the same order."""

from __future__ import annotations

import pytest
from starlette.responses import Response

from rewardgym.servers.wire import JSON_MEDIA, JsonResponse, json_response, raw_json_response


@pytest.mark.parametrize("status", [100, 200, 201, 204, 304, 404, 422, 500, 502])
@pytest.mark.parametrize("body", [b"", b'{"reward": 1.0}', '{"t": "é"}'.encode()])
def test_the_same_response_as_starlettes(status: int, body: bytes) -> None:
    ours, theirs = JsonResponse(body, status), Response(body, status_code=status, media_type=JSON_MEDIA)
    assert (ours.status_code, ours.body, ours.raw_headers) == (
        theirs.status_code,
        theirs.body,
        theirs.raw_headers,
    )
    assert ours.media_type == theirs.media_type and ours.background is theirs.background is None
    assert ours.headers == theirs.headers


def test_the_builders_keep_their_headers() -> None:
    assert raw_json_response(b"{}").raw_headers == [
        (b"content-length", b"2"),
        (b"content-type", b"application/json"),
    ]
    extra = json_response({"a": 1}, 429, headers={"Retry-After": "3"})
    assert extra.status_code == 429 and (b"retry-after", b"3") in extra.raw_headers
    assert extra.raw_headers[-2:] == [(b"content-length", b"7"), (b"content-type", b"application/json")]
