"""Direct dispatch (`servers.app.ServerApp`): which routes qualify, and answers identical to FastAPI's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
from fastapi import FastAPI, HTTPException, Request
from pydantic import BaseModel
from starlette.responses import Response, StreamingResponse

from rewardgym.servers.app import ServerApp
from rewardgym.servers.base import BaseServer
from rewardgym.servers.config import ServerConfig
from rewardgym.servers.errors import ApiError
from rewardgym.servers.wire import json_response, parse_body
from tests.stubs.client import Reply, call

COOKIE_ATTRIBUTES = "; path=/; Max-Age=1209600; httponly; samesite=lax"


class Args(BaseModel):
    count: int


class Brewing(Exception):
    """Answered by an exception handler the server registers itself."""


class ShapesServer(BaseServer[ServerConfig]):
    """Routes of every shape: direct-dispatch candidates and routes only FastAPI can serve."""

    async def _brewing(self, _request: Request, exc: Exception) -> Response:
        return json_response({"brewing": str(exc)}, 429)

    def setup_routes(self, app: FastAPI) -> None:
        async def plain(request: Request) -> Response:
            body = parse_body(Args, await request.body())
            return json_response({"count": body.count, "session": len(self.session_id(request))})

        async def no_args() -> Response:
            return json_response({"ok": True}, headers={"x-extra": "1"})

        async def named(req: Request) -> Response:
            return json_response({"path": req.url.path, "app": req.app is app})

        async def keyword(*, req: Request) -> Response:
            return json_response({"keyword": req.method})

        async def teapot() -> Response:
            raise ApiError(418, "short and stout", kind="teapot")

        async def conflict() -> Response:
            raise HTTPException(409, "already there")

        async def brewing() -> Response:
            raise Brewing("not yet")

        async def boom() -> Response:
            raise RuntimeError("exploded")

        async def chunks() -> AsyncIterator[bytes]:
            yield b"one,"
            yield b"two"

        async def stream() -> StreamingResponse:
            return StreamingResponse(chunks(), media_type="text/plain")

        async def query(x: int) -> dict[str, int]:
            return {"x": x}

        async def query_boom(x: int) -> dict[str, int]:
            raise RuntimeError(f"query {x} exploded")

        async def item(item_id: int) -> Response:
            return json_response({"item": item_id})

        async def after() -> Response:
            return json_response({"after": True})

        app.add_exception_handler(Brewing, self._brewing)
        app.add_api_route("/plain", plain, methods=["POST"])
        app.add_api_route("/no_args", no_args, methods=["GET"])
        app.add_api_route("/named", named, methods=["GET"])
        app.add_api_route("/keyword", keyword, methods=["GET"])
        app.add_api_route("/teapot", teapot, methods=["GET"])
        app.add_api_route("/conflict", conflict, methods=["GET"])
        app.add_api_route("/brewing", brewing, methods=["GET"])
        app.add_api_route("/boom", boom, methods=["GET"])
        app.add_api_route("/stream", stream, methods=["GET"])
        app.add_api_route("/query", query, methods=["GET"])
        app.add_api_route("/query_boom", query_boom, methods=["GET"])
        app.add_api_route("/items/{item_id}", item, methods=["GET"])
        app.add_api_route("/after", after, methods=["GET"])


# The same server served by FastAPI alone (same class name, so cookie names and error bodies are comparable).
FastAPIOnlyShapes: type[ShapesServer] = type("ShapesServer", (ShapesServer,), {"direct_dispatch": False})


class PassThrough:
    """A user middleware (pure ASGI) that does nothing."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


REQUESTS: list[tuple[str, str, dict[str, Any]]] = [
    ("GET", "/", {}),
    ("POST", "/plain", {"json": {"count": 3}}),
    ("POST", "/plain", {"json": {"count": "many"}}),
    ("POST", "/plain", {"data": b"{not json"}),
    ("GET", "/plain", {}),
    ("GET", "/no_args", {}),
    ("GET", "/named", {}),
    ("GET", "/keyword", {}),
    ("GET", "/teapot", {}),
    ("GET", "/conflict", {}),
    ("GET", "/brewing", {}),
    ("GET", "/boom", {}),
    ("GET", "/stream", {}),
    ("GET", "/query?x=5", {}),
    ("GET", "/query_boom?x=5", {}),
    ("GET", "/items/7", {}),
    ("GET", "/after", {}),
    ("GET", "/nope", {}),
    ("HEAD", "/", {}),
]


def comparable(reply: Reply) -> dict[str, Any]:
    """Status, body and headers of a reply, without what differs between two server instances."""
    headers: dict[str, Any] = {}
    for name, value in reply.headers:
        key = name.lower()
        if key == "date":
            continue
        if key == "set-cookie":
            cookie_name, _, rest = value.partition("=")
            headers.setdefault(key, []).append((cookie_name, rest[rest.index(";") :]))  # value differs
        else:
            headers.setdefault(key, []).append(value)
    body: Any = reply.body
    if reply.header("content-type") == "application/json" and reply.body:
        body = orjson.loads(reply.body)
    return {"status": reply.status, "headers": headers, "body": body}


def test_which_routes_are_dispatched_directly() -> None:
    app = ShapesServer({"name": "shapes"}).build_app()
    assert isinstance(app, ServerApp)
    direct = set(app.direct_routes())
    assert direct == {
        ("GET", "/"),
        ("POST", "/plain"),
        ("GET", "/no_args"),
        ("GET", "/named"),
        ("GET", "/keyword"),
        ("GET", "/teapot"),
        ("GET", "/conflict"),
        ("GET", "/brewing"),
        ("GET", "/boom"),
        ("GET", "/stream"),
    }  # not: query parameters, path parameters, anything after a parameterised path, HEAD
    fastapi_only = FastAPIOnlyShapes({"name": "shapes"}).build_app()
    assert isinstance(fastapi_only, ServerApp)
    assert fastapi_only.direct_routes() == {}


def test_an_earlier_route_keeps_its_path_and_middleware_turns_it_off(serve: Any) -> None:
    server = ShapesServer({"name": "shapes"})
    app = server.build_app()

    async def shadow() -> Response:
        return json_response({"shadow": True})

    app.add_api_route("/no_args", shadow, methods=["GET"])  # FastAPI would never reach it either
    srv = serve(server)
    assert call(srv.url, "GET", "/no_args").json() == {"ok": True}

    with_middleware = ShapesServer({"name": "shapes"}).build_app()
    with_middleware.add_middleware(PassThrough)  # it must see every request: no direct dispatch
    assert isinstance(with_middleware, ServerApp)
    assert with_middleware.direct_routes() == {}


def test_direct_answers_equal_fastapi_answers(serve: Any, tmp_path: Path) -> None:
    direct = serve(ShapesServer({"name": "shapes", "log_dir": str(tmp_path)}))
    fastapi_only = serve(FastAPIOnlyShapes({"name": "shapes", "log_dir": str(tmp_path)}))  # same log file
    for method, path, kwargs in REQUESTS:
        ours = comparable(call(direct.url, method, path, **kwargs))
        reference = comparable(call(fastapi_only.url, method, path, **kwargs))
        assert ours == reference, (method, path)
        assert ours["headers"]["set-cookie"] == [("ShapesServer___shapes", COOKIE_ATTRIBUTES)], (method, path)
        assert ours["headers"]["vary"] == ["Cookie"], (method, path)
    assert comparable(call(direct.url, "GET", "/stream"))["body"] == b"one,two"
    assert call(direct.url, "GET", "/named").json() == {"path": "/named", "app": True}
    assert call(direct.url, "GET", "/keyword").json() == {"keyword": "GET"}
    assert call(direct.url, "GET", "/brewing").json() == {"brewing": "not yet"}
    records = [orjson.loads(line) for line in (tmp_path / "shapes.log").read_text().splitlines()]
    crashes = sorted(r["msg"] for r in records if r["msg"].startswith("unhandled error"))
    assert crashes == 2 * ["unhandled error in GET /boom"] + 2 * ["unhandled error in GET /query_boom"]
    assert all("Traceback" in r["exc"] for r in records if r["msg"].startswith("unhandled error"))


def test_session_survives_direct_and_fastapi_routes(serve: Any) -> None:
    srv = serve(ShapesServer({"name": "shapes"}))
    first = call(srv.url, "POST", "/plain", json={"count": 1})
    cookies = first.cookies
    again = call(srv.url, "GET", "/query?x=1", cookies=cookies)  # FastAPI path, same session cookie
    assert again.cookies == cookies  # the same session id signed within the hour: the same cookie value
