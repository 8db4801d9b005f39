"""Request and response bodies of the environment (resources server) and agent endpoints.

``/run`` and ``/seed_session`` take a whole materialized row, so their models keep unknown fields.
Verify *responses* keep only the fields their class declares (NeMo Gym's ``extra="ignore"``): a rollout row
of mcqa has exactly ``responses_create_params, response, reward, expected_answer, extracted_answer``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field

from rewardgym.protocol.responses import Response, ResponseCreateParams


class AgentRef(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    type: str | None = None


class RunRequest(BaseModel):
    """A materialized row as sent to an agent's ``/run`` (extra row fields are kept)."""

    model_config = ConfigDict(extra="allow")
    responses_create_params: ResponseCreateParams


class SeedSessionRequest(RunRequest):
    """``/seed_session`` receives the whole row; environments declare the fields they read."""


class SeedSessionResponse(BaseModel):
    model_config = ConfigDict(extra="allow")


class VerifyRequest(RunRequest):
    """The row plus the final response of the episode."""

    response: Response


class VerifyResponse(BaseModel):
    """What ``/verify`` returns. Subclasses add fields (which then become rollout columns)."""

    responses_create_params: ResponseCreateParams
    response: Response
    reward: float

    @classmethod
    def of(cls, body: BaseModel, **fields: Any) -> Self:
        """This response built from the verify request ``body``: every field of this class that the request
        has is copied from it (the nested request/response models are not validated again), ``fields`` set
        the rest (``reward=…``, ``extracted_answer=…``)."""
        wanted = [name for name in cls.model_fields if name not in fields and hasattr(body, name)]
        values = {name: getattr(body, name) for name in wanted} | fields
        return cls.model_validate(values)


class MultiRewardVerifyResponse(VerifyResponse):
    """A reward made of named components (also exposed as top-level numeric fields to be profiled)."""

    reward_components: dict[str, float] = Field(default_factory=dict)


class AggregateMetricsRequest(BaseModel):
    verify_responses: list[dict[str, Any]]


class AggregateMetrics(BaseModel):
    group_level_metrics: list[dict[str, Any]] = Field(default_factory=list)
    agent_metrics: dict[str, Any] = Field(default_factory=dict)
    key_metrics: dict[str, Any] = Field(default_factory=dict)


class ReverifyMode(StrEnum):
    """Whether ``/verify`` can be replayed without the episode's session (for ``gym eval reverify``)."""

    STATELESS = "stateless"
    UNSUPPORTED = "unsupported"
    UNKNOWN = "unknown"
