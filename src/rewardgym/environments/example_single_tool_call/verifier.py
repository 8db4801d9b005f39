"""``example_single_tool_call`` verify: the reward is 1.0 for every trajectory (NeMo Gym's behaviour).

Contract (``docs/reference/environments.md`` §4):

- Row fields read: only ``responses_create_params`` (undeclared row fields are ignored).
- ``reward = 1.0`` unconditionally, also when the response holds no assistant message or no tool call.
- The response carries exactly ``responses_create_params, response, reward``.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from rewardgym.protocol import ReverifyMode, VerifyRequest, VerifyResponse


class ExampleSingleToolCallConfig(BaseModel):
    """Environment config of ``example_single_tool_call``: no fields (NeMo Gym's block is catalogue only)."""

    REVERIFY_MODE: ClassVar[ReverifyMode] = ReverifyMode.STATELESS
    """Verify reads only the row, so replaying it without the session is exact (NeMo Gym: ``unknown``)."""


class ExampleSingleToolCallVerifyRequest(VerifyRequest):
    """A row (only ``responses_create_params``) plus the episode's final response."""

    model_config = ConfigDict(extra="ignore")


class ExampleSingleToolCallVerifyResponse(VerifyResponse):
    """``responses_create_params, response, reward``: no extra fields."""


def verify(
    body: ExampleSingleToolCallVerifyRequest, config: ExampleSingleToolCallConfig
) -> ExampleSingleToolCallVerifyResponse:
    """Score the episode: always 1.0."""
    return ExampleSingleToolCallVerifyResponse(
        responses_create_params=body.responses_create_params, response=body.response, reward=1.0
    )
