"""Tool of ``example_single_tool_call``: ``get_weather``, a fixed answer ("cold") for any city.

Contract (``docs/reference/environments.md`` §4): ``POST /get_weather`` takes ``{"city": str}`` (required;
a missing ``city`` is a validation error → HTTP 422, whose body the agent shows to the model) and answers
``{"city": <city>, "weather_description": "The weather in <city> is cold."}``. The tool keeps no state.
The argument model's JSON schema, titles aside, is the rows' ``parameters`` (``additionalProperties: false``);
unknown argument keys are ignored, as NeMo Gym's request model does.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class GetWeatherArgs(BaseModel):
    # Arguments of ``get_weather``. No class docstring: it would become the schema's ``description``.
    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})

    city: str = Field(description="")
    """The city to report on."""


class GetWeatherResult(BaseModel):
    """Answer of ``get_weather`` (key order as NeMo Gym serialises it)."""

    city: str
    """The city that was asked about."""

    weather_description: str
    """Always ``"The weather in <city> is cold."``."""


def get_weather(args: GetWeatherArgs, state: dict[str, Any]) -> GetWeatherResult:
    """The weather of ``args.city`` (always cold); ``state`` is unused."""
    return GetWeatherResult(city=args.city, weather_description=f"The weather in {args.city} is cold.")


TOOLS = (get_weather,)
"""The environment's tools; each function's name is the tool name (``POST /<name>``)."""
