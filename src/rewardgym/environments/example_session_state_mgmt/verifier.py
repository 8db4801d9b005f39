"""``example_session_state_mgmt`` verify: the session's counter must equal the row's ``expected_count``.

Contract (``docs/reference/environments.md`` §6):

- Row fields read: ``expected_count`` (int, required); undeclared row fields are ignored.
- ``verify`` also takes the session's ``state`` dict (``None`` when the server does not know the session).
  Unknown session, or a state without a counter (see :mod:`.tools`) → reward 0.0; otherwise
  ``reward = float(expected_count == counter)``. The response's messages are not read, so a response with
  no assistant message scores by the counter alone.
- The response carries exactly ``responses_create_params, response, reward`` (``expected_count`` is not
  echoed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from rewardgym.environments.example_session_state_mgmt.tools import COUNTER_KEY
from rewardgym.protocol import ReverifyMode, VerifyRequest, VerifyResponse


class ExampleSessionStateMgmtConfig(BaseModel):
    """Config of ``example_session_state_mgmt``: no fields (NeMo Gym's block is catalogue-only)."""

    REVERIFY_MODE: ClassVar[ReverifyMode] = ReverifyMode.UNSUPPORTED
    """The reward is the session's counter, which a replay without the episode's session cannot see (it would
    score 0), so re-verification is refused (NeMo Gym: ``unknown``)."""


class ExampleSessionStateMgmtVerifyRequest(VerifyRequest):
    """An ``example_session_state_mgmt`` row plus the episode's final response."""

    model_config = ConfigDict(extra="ignore")

    expected_count: int
    """The counter value a correct episode ends with."""


class ExampleSessionStateMgmtVerifyResponse(VerifyResponse):
    """``responses_create_params, response, reward``: no extra fields."""


def verify(
    body: ExampleSessionStateMgmtVerifyRequest,
    config: ExampleSessionStateMgmtConfig,
    state: Mapping[str, Any] | None,
) -> ExampleSessionStateMgmtVerifyResponse:
    """Score the episode from the session's counter (see the module docstring)."""
    if state is None or COUNTER_KEY not in state:
        reward = 0.0
    else:
        reward = float(state[COUNTER_KEY] == body.expected_count)
    return ExampleSessionStateMgmtVerifyResponse(
        responses_create_params=body.responses_create_params, response=body.response, reward=reward
    )
