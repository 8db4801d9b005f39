"""``example_tool_call_multireward`` verify: ``reward = correctness + schema_valid + format`` (each 0 or 1).

Contract (``docs/reference/environments.md`` §7):

- Row fields read: ``expected_call`` (``{"name": str, "arguments": dict}``, default ``{}``).
- ``calls`` = every ``function_call`` item in output order; each call's ``arguments`` string is parsed with
  ``json.loads`` and is *valid* only when it gives a JSON object (otherwise the parsed value is ``{}``).
- ``format = 1.0`` iff there is exactly one call **and** the output holds no item of type ``message`` at all
  (any role, even empty). Under ``simple_agent`` an episode ends with a message, so it is structurally 0.
- ``schema_valid``: 0.0 without calls; else 1.0 iff the **first** call's arguments are valid and contain
  every name in ``parameters.required`` of the same-named tool of ``responses_create_params.tools``
  (no such tool → nothing required).
- ``correctness = 1.0`` iff ``expected_call`` is non-empty and some call has its ``name`` and, for every
  expected argument key, ``parsed.get(key) == value`` (extra predicted keys are allowed).
- The response carries ``responses_create_params, response, reward, reward_components`` (the three
  components by name) and each component as a top-level numeric field (so the profiler sees it), plus
  ``predicted_calls`` (``[{name, arguments: parsed dict}]``). ``expected_call`` is not echoed.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from rewardgym.protocol import (
    Message,
    MultiRewardVerifyResponse,
    ResponseCreateParams,
    ReverifyMode,
    VerifyRequest,
    function_calls,
)


class ExampleToolCallMultirewardConfig(BaseModel):
    """Config of ``example_tool_call_multireward``: no fields (NeMo Gym's block is catalogue-only)."""

    REVERIFY_MODE: ClassVar[ReverifyMode] = ReverifyMode.STATELESS
    """Verify reads only the row and the response's calls, so a replay is exact (NeMo Gym: ``unknown``)."""


class ExampleToolCallMultirewardVerifyRequest(VerifyRequest):
    """An ``example_tool_call_multireward`` row plus the episode's final response."""

    model_config = ConfigDict(extra="ignore")

    expected_call: dict[str, Any] = Field(default_factory=dict)
    """The call a correct episode makes: ``{"name": str, "arguments": {key: value}}``; empty never matches."""


class PredictedCall(BaseModel):
    """A call of the episode with its parsed arguments."""

    name: str
    """The called tool."""

    arguments: dict[str, Any]
    """The parsed arguments (``{}`` when they were not a JSON object)."""


class ExampleToolCallMultirewardVerifyResponse(MultiRewardVerifyResponse):
    """The verify answer: the summed reward, its components (nested and top level) and the parsed calls."""

    correctness: float
    """1.0 iff some call matches ``expected_call`` (name and expected argument values)."""

    schema_valid: float
    """1.0 iff the first call's arguments are a JSON object holding the tool's required keys."""

    format: float
    """1.0 iff the output is exactly one call and no message item."""

    predicted_calls: list[PredictedCall]
    """Every call of the episode, in output order."""


def parse_arguments(arguments: str) -> tuple[dict[str, Any], bool]:
    """The call's arguments as a dict, and whether they were a valid JSON object."""
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError:
        return {}, False
    return (parsed, True) if isinstance(parsed, dict) else ({}, False)


def _required_keys(params: ResponseCreateParams, tool_name: str) -> list[Any]:
    for tool in params.tools:
        if tool.name == tool_name:
            required = (tool.parameters or {}).get("required") or []
            return list(required) if isinstance(required, list) else []
    return []


def _matches(expected: dict[str, Any], call: PredictedCall) -> bool:
    if not expected or call.name != expected.get("name"):
        return False
    wanted = expected.get("arguments") or {}
    return isinstance(wanted, dict) and all(call.arguments.get(k) == v for k, v in wanted.items())


def verify(
    body: ExampleToolCallMultirewardVerifyRequest, config: ExampleToolCallMultirewardConfig
) -> ExampleToolCallMultirewardVerifyResponse:
    """Score the episode (see the module docstring)."""
    parsed = [(call.name, *parse_arguments(call.arguments)) for call in function_calls(body.response)]
    predicted = [PredictedCall(name=name, arguments=args) for name, args, _ in parsed]
    has_message = any(isinstance(item, Message) for item in body.response.output)
    format_score = float(len(predicted) == 1 and not has_message)
    if parsed:
        name, args, valid = parsed[0]
        required = _required_keys(body.responses_create_params, name)
        schema_valid = float(valid and all(key in args for key in required))
    else:
        schema_valid = 0.0
    correctness = float(any(_matches(body.expected_call, call) for call in predicted))
    components = {"correctness": correctness, "schema_valid": schema_valid, "format": format_score}
    return ExampleToolCallMultirewardVerifyResponse(
        responses_create_params=body.responses_create_params,
        response=body.response,
        reward=correctness + schema_valid + format_score,
        reward_components=components,
        correctness=correctness,
        schema_valid=schema_valid,
        format=format_score,
        predicted_calls=predicted,
    )
