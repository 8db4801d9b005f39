"""Extract the structured payload of a ``response_mode: tool_call`` answer.

Contract: :func:`tool_call_payload` returns the payload to validate, or raises :class:`AnswerError` whose
``error_type`` is the first failing step, in this order: ``api_error`` (``response.error`` set; message cut
to 200 characters), ``missing_tool_call``, ``multiple_tool_calls`` (checked before the name),
``wrong_tool_name`` (only when ``tool_name`` is set), ``tool_arguments_parse_error`` (string arguments that
are not JSON), ``missing_tool_payload_key`` (``tool_payload_key`` set and the arguments are not an object
holding it).
"""

from __future__ import annotations

import json
from typing import Any

from rewardgym.protocol import Response, function_calls

MESSAGE_LIMIT = 200
"""Error messages taken from the model's output or a library are cut to this many characters."""


class AnswerError(Exception):
    """The answer failed before validation; ``error_type`` names the failing step."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message


def _api_error_message(error: dict[str, Any]) -> str:
    message = error.get("message")
    return str(message if message is not None else error)[:MESSAGE_LIMIT]


def tool_call_payload(response: Response, tool_name: str | None, tool_payload_key: str | None) -> Any:
    """The payload of the single function call of ``response`` (see the module contract)."""
    if response.error is not None:
        raise AnswerError("api_error", _api_error_message(response.error))
    calls = function_calls(response)
    if not calls:
        raise AnswerError("missing_tool_call", "the response has no function call")
    if len(calls) > 1:
        raise AnswerError("multiple_tool_calls", f"the response has {len(calls)} function calls, expected 1")
    call = calls[0]
    if tool_name and call.name != tool_name:
        raise AnswerError("wrong_tool_name", f"called {call.name!r}, expected {tool_name!r}"[:MESSAGE_LIMIT])
    arguments: Any = call.arguments
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise AnswerError(
                "tool_arguments_parse_error", f"{type(exc).__name__}: {str(exc)[:MESSAGE_LIMIT]}"
            ) from exc
    if not tool_payload_key:
        return arguments
    if not isinstance(arguments, dict) or tool_payload_key not in arguments:
        raise AnswerError(
            "missing_tool_payload_key", f"the call arguments have no {tool_payload_key!r} key"[:MESSAGE_LIMIT]
        )
    return arguments[tool_payload_key]
