"""The ASGI app of a server: a FastAPI app whose simple routes are dispatched directly.

Contract of :class:`ServerApp` (what :func:`rewardgym.servers.base.build_app` returns):
- It *is* a FastAPI app: routes are added with ``app.add_api_route`` / decorators, exception handlers with
  ``app.add_exception_handler``, ``app.state`` works, and anything FastAPI offers (path parameters,
  dependencies, body models, docs, 404/405) behaves exactly as in FastAPI.
- Every HTTP request first passes the :class:`~rewardgym.servers.middleware.Gate` (auth → 401, size → 413,
  session cookie), whichever path serves it.
- *Direct dispatch*: a route qualifies when it is a plain ``APIRoute`` (not a custom route class) with an
  exact path (no parameters), an ``async`` endpoint taking nothing or only the Starlette ``Request``, no
  dependencies, and a return annotation that is a Starlette ``Response`` class — the shape of every route
  of the server base classes.
  Such a request skips FastAPI's middleware stack, router scan and dependency solving: the endpoint is
  awaited with the request, exceptions go to the app's exception handlers (looked up along the exception's
  MRO as Starlette does; anything unhandled → logged 500 JSON body) and the response is sent with the
  session headers. The answer — status, body, headers — is the same as through FastAPI; only the cost
  differs (tens of microseconds instead of hundreds).
- Everything else (other routes, ``HEAD``, unknown paths, wrong methods, a ``root_path``, apps with extra
  user middleware, apps built with ``direct_dispatch=False``) goes through the regular FastAPI stack.
- The dispatch table is built at the first request from the routes present then; routes added later are
  served by the FastAPI stack.
- A path ``/ng-rollout/<rollout id>/<rest>`` (NeMo Gym 0.7.0's rollout correlation) is served as
  ``/<rest>``, with the id in ``scope["rewardgym.rollout_id"]`` (:data:`ROLLOUT_SCOPE_KEY`): model servers
  capture such calls (:mod:`rewardgym.servers.model`), every other server just serves them.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any, cast

from fastapi import FastAPI
from fastapi.dependencies.utils import get_typed_return_annotation
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.sessions import Session
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from rewardgym.http import deadline
from rewardgym.http.local import BODY_SCOPE_KEY
from rewardgym.observe.capture import ROLLOUT_ID_PATTERN, ROLLOUT_PREFIX
from rewardgym.servers.middleware import BodyTooLarge, Gate, LastResortMiddleware, send_json

Endpoint = Callable[[Request], Awaitable[Response]]
_PLAIN_CALL = Response.__call__


def _direct_endpoint(route: APIRoute) -> Endpoint | None:
    """The endpoint of ``route`` as ``f(request)`` if it qualifies for direct dispatch (module docstring)."""
    endpoint = route.endpoint
    dependant = route.dependant
    if route.dependencies or not inspect.iscoroutinefunction(endpoint):
        return None
    if (
        dependant.dependencies
        or dependant.path_params
        or dependant.query_params
        or dependant.header_params
        or dependant.cookie_params
        or dependant.body_params
    ):
        return None
    try:
        returns = get_typed_return_annotation(endpoint)
        params = list(inspect.signature(endpoint).parameters.values())
    except (NameError, TypeError, ValueError):
        return None
    if not (isinstance(returns, type) and issubclass(returns, Response)):
        return None
    if not params:
        call: Callable[[], Awaitable[Response]] = endpoint

        async def no_args(_request: Request) -> Response:
            return await call()

        return no_args
    if len(params) == 1 and params[0].name == dependant.request_param_name:
        if params[0].kind is not inspect.Parameter.KEYWORD_ONLY:
            return endpoint
        name = params[0].name
        keyword: Callable[..., Awaitable[Response]] = endpoint

        async def by_name(request: Request) -> Response:
            return await keyword(**{name: request})

        return by_name
    return None


ROLLOUT_SCOPE_KEY = "rewardgym.rollout_id"
_ROLLOUT_START = f"/{ROLLOUT_PREFIX}/"
_ROLLOUT_PATH = re.compile(rf"^/{ROLLOUT_PREFIX}/(?P<id>{ROLLOUT_ID_PATTERN.pattern[1:-1]})(?P<rest>/.*)$")


class ServerApp(FastAPI):
    """FastAPI app of one server with direct dispatch of simple routes; see the module docstring."""

    def __init__(self, *, gate: Gate, direct_dispatch: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate = gate
        self._direct: dict[tuple[str, str], Endpoint] | None = None if direct_dispatch else {}
        self.add_middleware(LastResortMiddleware, gate=gate)

    def direct_routes(self) -> dict[tuple[str, str], Endpoint]:
        """``(method, path)`` → endpoint of the routes served by direct dispatch (built once)."""
        if self._direct is None:
            self._direct = self._build_direct_routes()
        return self._direct

    def _build_direct_routes(self) -> dict[tuple[str, str], Endpoint]:
        if any(cast(object, m.cls) is not LastResortMiddleware for m in self.user_middleware):
            return {}
        table: dict[tuple[str, str], Endpoint] = {}
        taken: set[tuple[str, str]] = set()  # (method, path) matched by an earlier route: it wins
        every_method: set[str] = set()  # paths of earlier routes that accept any method
        for route in self.router.routes:
            if not isinstance(route, Route) or route.param_convertors:
                break  # a mount or a parameterised path may match anything after it: stop here
            if route.path in every_method:
                continue
            if route.methods is None:
                every_method.add(route.path)
                continue
            direct = _direct_endpoint(route) if type(route) is APIRoute else None  # not custom route classes
            for method in route.methods:
                key = (method, route.path)
                if key in taken:
                    continue
                taken.add(key)
                if direct is not None and method != "HEAD":
                    table[key] = direct
        return table

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        gate = self.gate
        head = gate.read_head(scope["headers"])
        method: str = scope["method"]
        path: str = scope["path"]
        if path.startswith(_ROLLOUT_START) and (match := _ROLLOUT_PATH.match(path)) is not None:
            path = match.group("rest")
            scope = {**scope, "path": path, "raw_path": path.encode(), ROLLOUT_SCOPE_KEY: match.group("id")}
        if not head.authorized and not (method == "GET" and path == "/"):
            await send_json(send, 401, gate.unauthorized_body)
            return
        if head.content_length > gate.max_bytes:
            await send_json(send, 413, gate.too_large_body)
            return
        if head.chunked:
            receive = gate.limit(receive)
        if head.deadline is not None:  # the caller's deadline bounds every call made for this request
            deadline.enter(head.deadline)
        session, had_cookie = gate.cookies.open(head.cookie)
        scope["session"] = session
        endpoint = None if scope.get("root_path") else self.direct_routes().get((method, path))
        if endpoint is None:
            await self._via_fastapi(scope, receive, send, session, had_cookie)
        else:
            await self._direct_call(endpoint, scope, receive, send, session, had_cookie)

    async def _via_fastapi(
        self, scope: Scope, receive: Receive, send: Send, session: Session, had_cookie: bool
    ) -> None:
        cookies = self.gate.cookies

        async def send_with_session(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", ()), *cookies.headers(session, had_cookie)]
                message = {**message, "headers": headers}
            await send(message)

        await super().__call__(scope, receive, send_with_session)

    async def _direct_call(
        self,
        endpoint: Endpoint,
        scope: Scope,
        receive: Receive,
        send: Send,
        session: Session,
        had_cookie: bool,
    ) -> None:
        scope["app"] = self
        request = Request(scope, receive)
        body = scope.get(BODY_SCOPE_KEY)
        if body is not None:  # an in-process request (rewardgym.http.local): its body is already whole
            request._body = body  # Starlette's cache of ``await request.body()``
        gate = self.gate
        try:
            response = await endpoint(request)
        except BodyTooLarge:
            await send_json(send, 413, gate.too_large_body)
            return
        except Exception as exc:
            try:
                response = await self._handle(request, exc)
            except Exception as unhandled:
                await gate.internal_error(scope, send, unhandled, gate.cookies.headers(session, had_cookie))
                return
        extra = gate.cookies.headers(session, had_cookie)
        if type(response).__call__ is _PLAIN_CALL:  # a complete body: send it here, headers added
            headers = [*response.raw_headers, *extra]
            await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
            await send({"type": "http.response.body", "body": response.body})
            if response.background is not None:
                await response.background()
            return

        started = False

        async def send_with_session(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": [*message.get("headers", ()), *extra]}
            await send(message)

        try:
            await response(scope, receive, send_with_session)
        except Exception as exc:  # e.g. a streaming body that fails half-way
            if started:
                gate.log.exception("unhandled error while answering %s %s", scope["method"], scope["path"])
            else:
                await gate.internal_error(scope, send, exc, extra)

    async def _handle(self, request: Request, exc: Exception) -> Response:
        """The app's exception handler for ``exc`` (Starlette's lookup), or re-raise it if there is none."""
        handlers = self.exception_handlers
        handler = None
        if isinstance(exc, StarletteHTTPException) and exc.status_code != 500:
            handler = handlers.get(exc.status_code)
        if handler is None:
            for cls in type(exc).__mro__:
                if cls is not Exception and cls in handlers:
                    handler = handlers[cls]
                    break
        if handler is None:
            raise exc
        result = handler(request, exc)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, Response):
            raise TypeError(f"exception handler for {type(exc).__name__} returned {type(result).__name__}")
        return result
