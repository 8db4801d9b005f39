"""Verifier of ``xlam_fc``: did the model emit exactly the expected set of function calls?

Contract (NeMo Gym semantics):
- Predicted calls are **all** ``function_call`` items of the whole trajectory, as ``{name, arguments}``;
  arguments are decoded with ``json.loads``; invalid JSON, or JSON that is not an object, gives ``{}``.
- No expected calls: reward 1.0 iff there are no predicted calls (``num_correct`` 0).
- Otherwise greedy matching, each predicted call used at most once: for each expected call in order, the
  first unused predicted call with the same name whose arguments contain every expected key with an
  ``==``-equal decoded value (type-sensitive: ``"14" != 14``, while ``1 == 1.0 == True``; extra predicted
  arguments are allowed).
- reward 1.0 iff ``num_correct == num_expected == num_predicted``, else 0.0.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from rewardgym.protocol import Response, VerifyRequest, VerifyResponse, function_calls


class XlamFcConfig(BaseModel):
    """Environment config: NeMo Gym's ``xlam_fc`` server reads no fields of its own."""


class Call(BaseModel):
    """A function call by name with decoded arguments."""

    name: str
    """Function name."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Decoded arguments (a JSON object)."""


class XlamFcVerifyRequest(VerifyRequest):
    """A row of ``xlam_fc`` plus the episode's final response."""

    expected_answers: list[Call] = Field(default_factory=list)
    """The calls the model should make (order matters only for greedy matching)."""


class XlamFcVerifyResponse(VerifyResponse):
    """Verify result; the extra keys are the rollout columns NeMo Gym writes."""

    num_expected: int
    """Number of expected calls."""
    num_predicted: int
    """Number of function calls the model made."""
    num_correct: int
    """Number of expected calls matched by a distinct predicted call."""
    predicted_calls: list[Call]
    """The model's calls with decoded arguments, in output order."""


def decode_arguments(arguments: Any) -> dict[str, Any]:
    """Call arguments as a dict: JSON-decoded when a string; ``{}`` when invalid or not an object."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return {}
    return arguments if isinstance(arguments, dict) else {}


def predicted_calls(response: Response) -> list[Call]:
    """Every function call of the trajectory, with decoded arguments."""
    return [
        Call(name=call.name, arguments=decode_arguments(call.arguments)) for call in function_calls(response)
    ]


def _matches(expected: Call, predicted: Call) -> bool:
    if expected.name != predicted.name:
        return False
    return all(
        key in predicted.arguments and predicted.arguments[key] == value
        for key, value in expected.arguments.items()
    )


def count_correct(expected: list[Call], predicted: list[Call]) -> int:
    """Expected calls matched greedily, in order, each by the first unused matching predicted call."""
    used = [False] * len(predicted)
    correct = 0
    for want in expected:
        for index, got in enumerate(predicted):
            if not used[index] and _matches(want, got):
                used[index] = True
                correct += 1
                break
    return correct


def verify(body: XlamFcVerifyRequest, config: XlamFcConfig) -> XlamFcVerifyResponse:
    """Score one rollout (pure; no I/O)."""
    expected = body.expected_answers
    predicted = predicted_calls(body.response)
    if expected:
        correct = count_correct(expected, predicted)
        reward = 1.0 if correct == len(expected) == len(predicted) else 0.0
    else:
        correct = 0
        reward = 0.0 if predicted else 1.0
    return XlamFcVerifyResponse(
        responses_create_params=body.responses_create_params,
        response=body.response,
        reward=reward,
        num_expected=len(expected),
        num_predicted=len(predicted),
        num_correct=correct,
        predicted_calls=predicted,
    )
