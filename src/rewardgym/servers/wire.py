"""Fast JSON in and out of handlers: orjson/pydantic-core serialisation and strict body parsing.

Contract:
- :func:`json_response` / :func:`model_response` build responses without FastAPI's generic encoder.
- :func:`parse_body` validates raw request bytes straight into a pydantic model (pydantic-core's JSON
  parser) and raises FastAPI's ``RequestValidationError`` with ``loc`` starting at ``"body"`` on failure,
  so the app answers HTTP 422 naming the field. An empty body is parsed as ``{}``.
- :func:`error_body` is the one shape of every error answer:
  ``{"error": {"server": "<Class>___<name>", "type": ..., "message": ...}}`` (plus ``detail`` for
  FastAPI compatibility where FastAPI would have one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError
from starlette.responses import Response

from rewardgym.protocol.keys import RESPONSES_CREATE_PARAMS

if TYPE_CHECKING:
    from fastapi.exceptions import RequestValidationError

M = TypeVar("M", bound=BaseModel)

JSON_MEDIA = "application/json"


class JsonResponse(Response):
    """A complete JSON body: the headers Starlette's ``Response`` would give it (``content-length``, then
    ``content-type: application/json``; no length for 1xx, 204 and 304), set in one step — every hop of
    every rollout answers one, and the generic constructor's header handling was ≈ 1 µs of each."""

    media_type = JSON_MEDIA

    def __init__(self, body: bytes, status_code: int = 200) -> None:
        self.status_code = status_code
        self.background = None
        self.body = body
        if status_code < 200 or status_code in (204, 304):
            self.raw_headers = [_JSON_TYPE]
        else:
            self.raw_headers = [(b"content-length", b"%d" % len(body)), _JSON_TYPE]


_JSON_TYPE = (b"content-type", JSON_MEDIA.encode("latin-1"))


def json_response(content: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON response serialised with orjson."""
    if headers:
        return Response(orjson.dumps(content), status_code=status, headers=headers, media_type=JSON_MEDIA)
    return JsonResponse(orjson.dumps(content), status)


def raw_json_response(body: bytes, status: int = 200) -> Response:
    """A response whose body is already JSON bytes (forwarded verbatim)."""
    return JsonResponse(body, status)


def model_response(model: BaseModel, *, exclude_unset: bool = False, status: int = 200) -> Response:
    """A pydantic model serialised by pydantic-core (fields the class declares, extras if it allows)."""
    return JsonResponse(model.__pydantic_serializer__.to_json(model, exclude_unset=exclude_unset), status)


def request_validation_error(errors: list[dict[str, Any]]) -> RequestValidationError:
    """FastAPI's 422 exception for ``errors`` (FastAPI is imported here, on the error path, so that this
    module stays light for processes that never build a FastAPI app)."""
    from fastapi.exceptions import RequestValidationError

    return RequestValidationError(errors)


def validation_errors(
    exc: ValidationError, prefix: tuple[str | int, ...] = ("body",)
) -> list[dict[str, Any]]:
    """Pydantic errors as FastAPI-style entries with ``loc`` prefixed (input values are not echoed)."""
    return [
        {"type": err["type"], "loc": [*prefix, *err["loc"]], "msg": err["msg"]}
        for err in exc.errors(include_url=False, include_input=False, include_context=False)
    ]


def parse_body(model: type[M], body: bytes, prefix: tuple[str | int, ...] = ("body",)) -> M:
    """Validate JSON bytes into ``model``; ``RequestValidationError`` (→ HTTP 422) naming the field."""
    try:
        return model.model_validate_json(body or b"{}")
    except ValidationError as exc:
        raise request_validation_error(validation_errors(exc, prefix)) from None


def parse_value(model: type[M], value: Any, prefix: tuple[str | int, ...]) -> M:
    """Validate an already-parsed value into ``model``; 422 naming the field under ``prefix``."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise request_validation_error(validation_errors(exc, prefix)) from None


def load_json_object(body: bytes) -> dict[str, Any]:
    """Parse a request body that must be a JSON object; 422 otherwise."""
    try:
        value = orjson.loads(body or b"{}")
    except orjson.JSONDecodeError as exc:
        raise request_validation_error(
            [{"type": "json_invalid", "loc": ["body"], "msg": f"Invalid JSON: {exc}"}]
        ) from None
    if not isinstance(value, dict):
        raise request_validation_error(
            [{"type": "dict_type", "loc": ["body"], "msg": "Input should be a JSON object"}]
        )
    return value


def load_row(body: bytes) -> dict[str, Any]:
    """A request body that must be a row: a JSON object with a ``responses_create_params`` key; 422
    otherwise (pydantic's ``missing`` error, as a model declaring the field would give)."""
    row = load_json_object(body)
    if RESPONSES_CREATE_PARAMS not in row:
        loc = ["body", RESPONSES_CREATE_PARAMS]
        raise request_validation_error([{"type": "missing", "loc": loc, "msg": "Field required"}])
    return row


def describe_validation(errors: list[dict[str, Any]], limit: int = 5) -> str:
    """One line naming the failing fields: ``body.a.b: msg; body.c: msg``."""
    parts = [
        ".".join(str(p) for p in err.get("loc", ())) + f": {err.get('msg', '')}" for err in errors[:limit]
    ]
    if len(errors) > limit:
        parts.append(f"… and {len(errors) - limit} more")
    return "; ".join(parts)


def error_body(server: str, kind: str, message: str, **extra: Any) -> dict[str, Any]:
    """The JSON body of every error answer."""
    return {**extra, "error": {"server": server, "type": kind, "message": message}}
