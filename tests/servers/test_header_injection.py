"""Header values are validated once at configuration time, and neither transport ever sends a CR/LF.

Against a real stub upstream, over both transports (the lean HTTP/1.1 one and aiohttp):
- a client's fixed headers with a CR/LF are refused when the client is built (ConfigError);
- a per-call header with one is refused before anything is sent (final error naming the header, not its
  value), and the upstream sees no request at all;
- a non-ASCII value reaches the upstream as the same UTF-8 bytes from both transports;
- server and model configs refuse a CR/LF in ``auth_token``, ``api_key`` and ``default_headers``, naming the
  field and never the value.
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from rewardgym.errors import ConfigError
from rewardgym.http.client import HttpClient
from rewardgym.http.config import HttpClientConfig
from rewardgym.http.errors import UpstreamConnectionError
from rewardgym.launch.serve import ThreadedServer
from rewardgym.models.vllm_model import VLLMModel
from rewardgym.protocol.headers import check_headers, header_problem
from rewardgym.servers.base import BaseServer
from tests.stubs.echo_upstream import EchoCredentialUpstream

CONFIG = HttpClientConfig(max_attempts=3, backoff_base_s=0.01, read_timeout_s=5.0)
INJECTIONS = ["k\r\nX-Injected: 1", "k\nX-Injected: 1", "k\rX", "k\x00", "k\x7f"]


@pytest.fixture(params=[True, False], ids=["h1", "aiohttp"])
def fast(request: pytest.FixtureRequest) -> HttpClientConfig:
    return CONFIG.model_copy(update={"fast_http": request.param})


@pytest.fixture
def echo() -> Any:
    app = EchoCredentialUpstream(status=400)
    with ThreadedServer(cast(Any, app), name="echo") as runner:
        yield runner, app


@pytest.mark.parametrize("value", INJECTIONS)
def test_fixed_headers_with_a_control_character_are_refused_when_the_client_is_built(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        HttpClient(CONFIG, headers={"Authorization": f"Bearer {value}"})
    assert "Authorization" in str(caught.value) and "X-Injected" not in str(caught.value)


async def test_a_per_call_crlf_is_never_sent(echo: Any, fast: HttpClientConfig) -> None:
    runner, app = echo
    async with HttpClient(fast) as client:
        with pytest.raises(UpstreamConnectionError) as caught:
            await client.post(
                f"{runner.url}/v1/chat/completions",
                json={},
                headers={"Authorization": "Bearer k\r\nX-Evil: 1"},
            )
    assert caught.value.final and "Authorization" in str(caught.value)
    assert "X-Evil" not in str(caught.value)
    assert app.received == []  # nothing reached the upstream: no request, no injected header


async def test_both_transports_send_a_non_ascii_value_as_the_same_utf8_bytes(echo: Any) -> None:
    runner, app = echo
    for fast_http in (True, False):
        async with HttpClient(CONFIG.model_copy(update={"fast_http": fast_http})) as client:
            reply = await client.post(
                f"{runner.url}/v1/chat/completions",
                json={},
                headers={"Authorization": "Bearer clé-€"},
                raise_for_status=False,
            )
        assert reply.status == 400
    assert app.received == ["clé-€".encode(), "clé-€".encode()]


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"api_key": "sk-abc\r\nX-Evil: 1"}, "m.api_key"),
        ({"default_headers": {"X-Team": "a\nX-Evil: 1"}}, "m.default_headers"),
        ({"default_headers": {"Bad Name": "v"}}, "m.default_headers"),
        ({"auth_token": "tok\r\nX-Evil: 1"}, "m.auth_token"),
    ],
)
def test_server_configs_refuse_a_header_that_is_not_one_line(fields: dict[str, Any], where: str) -> None:
    config = {"name": "m", "base_url": "http://127.0.0.1:9/v1", "model": "x", **fields}
    with pytest.raises(ConfigError) as caught:
        VLLMModel.load_config(config)
    message = str(caught.value)
    assert where in message and "X-Evil" not in message and "sk-abc" not in message
    if "auth_token" in fields:
        with pytest.raises(ConfigError, match=r"m\.auth_token"):
            BaseServer.load_config({"name": "m", "auth_token": fields["auth_token"]})


def test_the_header_rule() -> None:
    assert header_problem("X-Ok", "tab\tand é are fine") is None
    assert header_problem("X Bad", "v") is not None
    for value in INJECTIONS:
        assert header_problem("X", value) is not None
    with pytest.raises(ConfigError, match=r"^where\.X-A: contains LF"):
        check_headers({"X-A": "a\nb"}, "where")
