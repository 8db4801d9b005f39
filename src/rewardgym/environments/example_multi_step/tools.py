"""Tools of ``example_multi_step``: ``get_synonym_value`` and ``extract_synonym_values`` (stateless).

Contract (``docs/reference/environments.md`` §5):

- ``POST /get_synonym_value {"synonym": str}`` → ``{"synonym_value": int}``, the sum of the Unicode code
  points of the string (``"Blazing"`` → 711, ``"Warm"`` → 407, ``"Hot"`` → 299).
- ``POST /extract_synonym_values {"synonym_values": [int]}`` → ``{"success": true}``; the values are read by
  verify from the call's arguments, not from server state.
- The argument models' JSON schemas equal the rows' tool ``parameters`` (field titles and descriptions
  included, ``additionalProperties: false``); unknown argument keys are ignored like NeMo Gym's models do.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

_ROW_SHAPE = ConfigDict(json_schema_extra={"additionalProperties": False})


class GetSynonymValueArgs(BaseModel):
    # Arguments of ``get_synonym_value``. No class docstring: it would become the schema's ``description``.
    model_config = _ROW_SHAPE

    synonym: str = Field(description="The synonym to get the value for.")
    """The synonym to look up."""


class GetSynonymValueResult(BaseModel):
    # Answer of ``get_synonym_value``; its schema is quoted in the rows' tool description.

    synonym_value: int = Field(description="The value for this synonym.")
    """Sum of the Unicode code points of the synonym."""


class ExtractSynonymValuesArgs(BaseModel):
    # Arguments of ``extract_synonym_values``. No class docstring (see above).
    model_config = _ROW_SHAPE

    synonym_values: list[int] = Field(
        description="The synonym values corresponding to the term for the user query."
    )
    """The values the model reports, in the order of the synonyms."""


class ExtractSynonymValuesResult(BaseModel):
    # Answer of ``extract_synonym_values``; its schema is quoted in the rows' tool description.

    success: bool = Field(description="Success.")
    """Always true."""


def synonym_value(synonym: str) -> int:
    """The value of a synonym: the sum of the Unicode code points of its characters."""
    return sum(ord(ch) for ch in synonym)


def get_synonym_value(args: GetSynonymValueArgs, state: dict[str, Any]) -> GetSynonymValueResult:
    """The value of ``args.synonym``; ``state`` is unused."""
    return GetSynonymValueResult(synonym_value=synonym_value(args.synonym))


def extract_synonym_values(
    args: ExtractSynonymValuesArgs, state: dict[str, Any]
) -> ExtractSynonymValuesResult:
    """Acknowledge the reported values (verify reads them from the call itself); ``state`` is unused."""
    return ExtractSynonymValuesResult(success=True)


TOOLS = (get_synonym_value, extract_synonym_values)
"""The environment's tools; each function's name is the tool name (``POST /<name>``)."""
