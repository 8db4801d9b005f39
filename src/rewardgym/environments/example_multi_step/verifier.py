"""``example_multi_step`` verify: the last ``extract_synonym_values`` call must report the expected list.

Contract (``docs/reference/environments.md`` §5):

- Row fields read: ``expected_synonym_values`` (list[int]), ``minefield_label`` (str) and
  ``minefield_label_value`` (int), all required; ``id`` and ``expected_synonyms`` are accepted and unused.
- ``actual`` = the ``synonym_values`` argument of the **last** ``function_call`` named
  ``extract_synonym_values`` in ``response.output`` (``[]`` when there is none, so a response without any
  assistant message or call scores 0).
- ``accuracy = (actual == expected)`` (ordered), ``reward = float(accuracy)``,
  ``set_overlap = |set(actual) ∩ set(expected)| / len(expected)``,
  ``original_term_minefield_hit = minefield_label in actual or minefield_label_value in actual``,
  ``order_instruction_following_failure = not accuracy and set_overlap == 1.0``.
- The response carries exactly ``responses_create_params, response, reward, parsed_synonym_values,
  accuracy, set_overlap, original_term_minefield_hit, order_instruction_following_failure``.
- Differences from NeMo Gym (which answers HTTP 500 in these cases): last-call arguments that are not a JSON
  object holding a ``synonym_values`` list count as ``actual = []`` (reward 0); an empty expected list gives
  ``set_overlap`` 1.0 when ``actual`` is empty too, else 0.0; unhashable items never overlap.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from rewardgym.protocol import Response, ReverifyMode, VerifyRequest, VerifyResponse, function_calls

EXTRACT_TOOL = "extract_synonym_values"


class ExampleMultiStepConfig(BaseModel):
    """Environment config of ``example_multi_step``: no fields (NeMo Gym's block is catalogue only)."""

    REVERIFY_MODE: ClassVar[ReverifyMode] = ReverifyMode.STATELESS
    """Verify reads only the row and the response's calls, so a replay is exact (NeMo Gym: ``unknown``)."""


class ExampleMultiStepVerifyRequest(VerifyRequest):
    """An ``example_multi_step`` row plus the episode's final response."""

    model_config = ConfigDict(extra="ignore")

    expected_synonym_values: list[int]
    """Values of the relevant term's synonyms, in the order the system prompt lists the synonyms."""

    minefield_label: str
    """The original term (e.g. ``"Hot"``); reporting it is a "minefield hit"."""

    minefield_label_value: int
    """The value of the original term; reporting it is a "minefield hit"."""

    id: int | None = None
    """Row identifier (unused)."""

    expected_synonyms: list[str] | None = None
    """The synonyms themselves (unused by verify)."""


class ExampleMultiStepVerifyResponse(VerifyResponse):
    """The verify answer: reward plus the diagnostics NeMo Gym returns."""

    parsed_synonym_values: list[Any]
    """The values of the last ``extract_synonym_values`` call (``[]`` when there is none)."""

    accuracy: bool
    """Whether the reported list equals the expected list (order matters)."""

    set_overlap: float
    """Share of the expected values present in the reported list, ignoring order."""

    original_term_minefield_hit: bool
    """Whether the original term or its value was reported."""

    order_instruction_following_failure: bool
    """The right values in the wrong order (or with extras): not accurate but full overlap."""


def reported_values(response: Response) -> list[Any]:
    """``synonym_values`` of the last ``extract_synonym_values`` call, or ``[]``."""
    calls = [call for call in function_calls(response) if call.name == EXTRACT_TOOL]
    if not calls:
        return []
    try:
        arguments = json.loads(calls[-1].arguments)
    except json.JSONDecodeError:
        return []
    values = arguments.get("synonym_values") if isinstance(arguments, dict) else None
    return values if isinstance(values, list) else []


def _hashable(values: list[Any]) -> set[Any]:
    return {v for v in values if isinstance(v, Hashable)}


def verify(
    body: ExampleMultiStepVerifyRequest, config: ExampleMultiStepConfig
) -> ExampleMultiStepVerifyResponse:
    """Score the episode (see the module docstring)."""
    expected = body.expected_synonym_values
    actual = reported_values(body.response)
    accuracy = actual == expected
    if expected:
        set_overlap = len(_hashable(actual) & set(expected)) / len(expected)
    else:
        set_overlap = 1.0 if not actual else 0.0
    return ExampleMultiStepVerifyResponse(
        responses_create_params=body.responses_create_params,
        response=body.response,
        reward=float(accuracy),
        parsed_synonym_values=actual,
        accuracy=accuracy,
        set_overlap=set_overlap,
        original_term_minefield_hit=body.minefield_label in actual or body.minefield_label_value in actual,
        order_instruction_following_failure=(not accuracy) and set_overlap == 1.0,
    )
