"""Session seeding and tools of ``example_session_state_mgmt``: a counter in the per-session ``state`` dict.

Contract (``docs/reference/environments.md`` §6). ``state`` is the session's dict, which the server keys by
the session cookie; the counter lives under :data:`COUNTER_KEY`, and a session whose dict lacks it is
"unknown".

- ``seed_session(row)``: ``state.setdefault(COUNTER_KEY, row.initial_count)`` — a second seed in the same
  session does not overwrite; the endpoint answers ``{}``.
- ``POST /increment_counter {"count": int}``: ``counter = state.setdefault(COUNTER_KEY, 0) + count`` →
  ``{"success": true}``.
- ``POST /get_counter_value`` (body ignored; the agent sends ``{}``) → ``{"count": state.setdefault(...,
  0)}``, which also makes an unknown session known, as in NeMo Gym.
- The argument models' JSON schemas equal the rows' tool ``parameters`` (titles aside).
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from rewardgym.protocol import SeedSessionRequest

COUNTER_KEY: Final = "counter"
"""Key of the counter in the session's ``state`` dict."""


class ExampleSessionStateMgmtSeedSessionRequest(SeedSessionRequest):
    """The row as sent to ``/seed_session``; only ``initial_count`` is read."""

    initial_count: int
    """Starting value of the session's counter."""


class IncrementCounterArgs(BaseModel):
    # Arguments of ``increment_counter``. No class docstring: it would become the schema's ``description``.
    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})

    count: int = Field(description="")
    """Amount added to the counter."""


class GetCounterValueArgs(BaseModel):
    # ``get_counter_value`` takes no arguments (the agent sends ``{}``; any keys are ignored).
    model_config = ConfigDict(json_schema_extra={"additionalProperties": False, "required": []})


class IncrementCounterResult(BaseModel):
    """Answer of ``increment_counter``."""

    success: bool
    """Always true."""


class GetCounterValueResult(BaseModel):
    """Answer of ``get_counter_value``."""

    count: int
    """The session's counter."""


def seed_session(body: ExampleSessionStateMgmtSeedSessionRequest, state: dict[str, Any]) -> None:
    """Start the session's counter at ``initial_count`` unless the session already has one."""
    state.setdefault(COUNTER_KEY, body.initial_count)


def increment_counter(args: IncrementCounterArgs, state: dict[str, Any]) -> IncrementCounterResult:
    """Add ``args.count`` to the session's counter (which starts at 0 in an unseeded session)."""
    state[COUNTER_KEY] = state.setdefault(COUNTER_KEY, 0) + args.count
    return IncrementCounterResult(success=True)


def get_counter_value(args: GetCounterValueArgs, state: dict[str, Any]) -> GetCounterValueResult:
    """The session's counter (0, and now set, in an unseeded session)."""
    return GetCounterValueResult(count=state.setdefault(COUNTER_KEY, 0))


TOOLS = (increment_counter, get_counter_value)
"""The environment's tools; each function's name is the tool name (``POST /<name>``)."""
