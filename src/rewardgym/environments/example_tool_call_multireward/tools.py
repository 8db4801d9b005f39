"""Tool of ``example_tool_call_multireward``: ``get_weather``, a fixed answer ("sunny") for any city.

Contract (``docs/reference/environments.md`` §7): ``POST /get_weather {"city": str}`` (required) →
``{"city": <city>, "weather_description": "The weather in <city> is sunny."}``; no state. The argument
model's JSON schema, titles aside, is the rows' ``parameters``; unknown argument keys are ignored.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class GetWeatherArgs(BaseModel):
    # Arguments of ``get_weather``. No class docstring: it would become the schema's ``description``.
    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})

    city: str = Field(description="The city to get the weather for.")
    """The city to report on."""


class GetWeatherResult(BaseModel):
    """Answer of ``get_weather`` (key order as NeMo Gym serialises it)."""

    city: str
    """The city that was asked about."""

    weather_description: str
    """Always ``"The weather in <city> is sunny."``."""


def get_weather(args: GetWeatherArgs, state: dict[str, Any]) -> GetWeatherResult:
    """The weather of ``args.city`` (always sunny); ``state`` is unused."""
    return GetWeatherResult(city=args.city, weather_description=f"The weather in {args.city} is sunny.")


TOOLS = (get_weather,)
"""The environment's tools; each function's name is the tool name (``POST /<name>``)."""
