"""The shared server behaviour over real HTTP: liveness, sessions, errors, limits, auth, logs."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any, ClassVar

import orjson
import pytest
from fastapi import FastAPI, Request
from pydantic import BaseModel
from starlette.responses import Response

from rewardgym.errors import ConfigError
from rewardgym.servers.base import BaseServer
from rewardgym.servers.config import ServerConfig
from rewardgym.servers.errors import ApiError
from rewardgym.servers.wire import json_response, parse_body
from tests.stubs.client import call

SECRET = "sk-test-secret-value-123456"


class EchoArgs(BaseModel):
    count: int
    label: str


class ProbeConfig(ServerConfig):
    upstream: str = "http://127.0.0.1:9"
    """Where /upstream calls."""


class ProbeServer(BaseServer[ProbeConfig]):
    config_class: ClassVar[type[ServerConfig]] = ProbeConfig

    def setup_routes(self, app: FastAPI) -> None:
        async def whoami(request: Request) -> Response:
            return json_response({"session_id": self.session_id(request)})

        async def boom() -> Response:
            raise RuntimeError(f"exploded while holding {SECRET}")

        async def teapot() -> Response:
            raise ApiError(418, "short and stout", kind="teapot")

        async def echo(request: Request) -> Response:
            args = parse_body(EchoArgs, await request.body())
            return json_response(args.model_dump())

        async def upstream() -> Response:
            reply = await self.http.post(self.config.upstream, json={"input": "hi"})
            return json_response({"status": reply.status})

        app.add_api_route("/whoami", whoami, methods=["GET"])
        app.add_api_route("/boom", boom, methods=["GET"])
        app.add_api_route("/teapot", teapot, methods=["GET"])
        app.add_api_route("/echo", echo, methods=["POST"])
        app.add_api_route("/upstream", upstream, methods=["GET"])


def dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_liveness_and_session_cookie(serve: Any) -> None:
    srv = serve(ProbeServer({"name": "probe"}))
    reply = call(srv.url, "GET", "/")
    assert reply.status == 200
    assert reply.json() == {"status": "ok", "name": "probe"}
    assert "ProbeServer___probe" in reply.cookies

    first = call(srv.url, "GET", "/whoami")
    sid = first.json()["session_id"]
    assert len(sid) == 32
    again = call(srv.url, "GET", "/whoami", cookies=first.cookies)
    assert again.json()["session_id"] == sid
    assert "ProbeServer___probe" in again.cookies  # re-sent on every response
    fresh = call(srv.url, "GET", "/whoami")
    assert fresh.json()["session_id"] != sid


def test_forged_cookie_starts_a_new_session(serve: Any) -> None:
    srv = serve(ProbeServer({"name": "probe"}))
    first = call(srv.url, "GET", "/whoami")
    other = serve(ProbeServer({"name": "probe"}))  # same cookie name, different per-start secret
    reply = call(other.url, "GET", "/whoami", cookies=first.cookies)
    assert reply.json()["session_id"] != first.json()["session_id"]


def test_error_bodies_name_the_server_and_never_a_traceback(serve: Any, tmp_path: Path) -> None:
    srv = serve(ProbeServer({"name": "probe", "log_dir": str(tmp_path)}))
    missing = call(srv.url, "GET", "/nope")
    assert missing.status == 404
    assert missing.json()["error"]["server"] == "ProbeServer___probe"
    assert missing.json()["detail"] == "Not Found"

    teapot = call(srv.url, "GET", "/teapot")
    assert teapot.status == 418
    assert teapot.json()["error"] == {
        "server": "ProbeServer___probe",
        "type": "teapot",
        "message": "short and stout",
    }

    boom = call(srv.url, "GET", "/boom")
    assert boom.status == 500
    body = boom.json()
    assert body["error"]["type"] == "internal_error"
    assert "RuntimeError" in body["error"]["message"]
    assert "Traceback" not in boom.body.decode()
    assert SECRET not in boom.body.decode()

    log = (tmp_path / "probe.log").read_text()
    records = [orjson.loads(line) for line in log.splitlines()]
    crash = [r for r in records if "unhandled error" in r["msg"]]
    assert crash and "Traceback" in crash[0]["exc"]
    assert SECRET not in log


def test_422_names_the_field(serve: Any) -> None:
    srv = serve(ProbeServer({"name": "probe"}))
    reply = call(srv.url, "POST", "/echo", json={"count": "many"})
    assert reply.status == 422
    locs = [tuple(d["loc"]) for d in reply.json()["detail"]]
    assert ("body", "count") in locs and ("body", "label") in locs
    assert "body.count" in reply.json()["error"]["message"]

    bad_json = call(srv.url, "POST", "/echo", data=b"{not json")
    assert bad_json.status == 422
    assert bad_json.json()["error"]["type"] == "validation_error"


def test_request_size_limit(serve: Any) -> None:
    srv = serve(ProbeServer({"name": "probe", "max_request_bytes": 2048}))
    big = orjson.dumps({"count": 1, "label": "x" * 5000})
    reply = call(srv.url, "POST", "/echo", data=big)
    assert reply.status == 413
    assert reply.json()["error"]["type"] == "request_too_large"
    small = call(srv.url, "POST", "/echo", json={"count": 1, "label": "ok"})
    assert small.status == 200


def test_request_size_limit_without_content_length(serve: Any) -> None:
    import http.client

    srv = serve(ProbeServer({"name": "probe", "max_request_bytes": 2048}))
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    conn.putrequest("POST", "/echo")
    conn.putheader("Transfer-Encoding", "chunked")
    conn.putheader("Content-Type", "application/json")
    conn.endheaders()
    chunk = b"x" * 1500
    for _ in range(3):
        conn.send(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
    conn.send(b"0\r\n\r\n")
    resp = conn.getresponse()
    assert resp.status == 413
    conn.close()


def test_auth_token(serve: Any) -> None:
    srv = serve(ProbeServer({"name": "probe", "auth_token": "tok-abcdef-123"}))
    assert call(srv.url, "GET", "/").status == 200  # liveness stays open
    denied = call(srv.url, "GET", "/whoami")
    assert denied.status == 401
    assert denied.json()["error"]["type"] == "unauthorized"
    assert call(srv.url, "GET", "/whoami", headers={"Authorization": "Bearer wrong"}).status == 401
    assert call(srv.url, "GET", "/whoami", headers={"Authorization": "Bearer tok-abcdef-123"}).status == 200
    assert call(srv.url, "GET", "/whoami", headers={"X-Rewardgym-Token": "tok-abcdef-123"}).status == 200


def test_upstream_failures_map_to_502_and_504(serve: Any, stub: Any) -> None:
    runner, app = stub
    fast_fail = {"max_attempts": 2, "backoff_base_s": 0.01, "read_timeout_s": 0.3}
    refused = serve(
        ProbeServer({"name": "p1", "upstream": f"http://127.0.0.1:{dead_port()}", "http": fast_fail})
    )
    reply = call(refused.url, "GET", "/upstream")
    assert reply.status == 502
    assert reply.json()["error"]["type"] == "upstream_unreachable"

    proxy = serve(ProbeServer({"name": "p2", "upstream": f"{runner.url}/v1/responses", "http": fast_fail}))
    app.state.mode = "status"
    app.state.fail_status = 400
    reply = call(proxy.url, "GET", "/upstream")
    assert reply.status == 400  # the upstream rejected the request itself: no caller should retry it
    assert reply.json()["error"]["type"] == "upstream_rejected"
    assert "HTTP 400" in reply.json()["error"]["message"]
    assert len(app.requests) == 1  # a 400 is never retried

    app.state.fail_status = 503
    reply = call(proxy.url, "GET", "/upstream")
    assert reply.status == 502
    assert reply.json()["error"]["type"] == "upstream_http_error"

    app.state.mode = "hang"
    started = time.monotonic()
    reply = call(proxy.url, "GET", "/upstream")
    assert reply.status == 504
    assert reply.json()["error"]["type"] == "upstream_timeout"
    assert time.monotonic() - started < 5  # two bounded attempts, not a hang


def test_invalid_config_names_the_field() -> None:
    with pytest.raises(ConfigError) as info:
        ProbeServer({"name": "probe", "upstreem": "x"})
    assert "probe.upstreem: unknown field" in str(info.value)
    with pytest.raises(ConfigError) as info:
        ProbeServer({"name": "probe", "port": 70000})
    assert "probe.port" in str(info.value)
    with pytest.raises(ConfigError) as info:
        ProbeServer({"port": 1})
    assert ".name" in str(info.value)


def test_secrets_are_not_in_repr() -> None:
    srv = ProbeServer({"name": "probe", "auth_token": "tok-abcdef-123", "session_secret": "s3cr3t-value-xyz"})
    assert "tok-abcdef-123" not in repr(srv.config)
    assert "s3cr3t-value-xyz" not in repr(srv.config)
    assert srv.session_secret == "s3cr3t-value-xyz"
