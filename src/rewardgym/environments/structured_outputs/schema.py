"""JSON Schema handling of ``structured_outputs``: strictify, then validate with the OpenAPI 3.1 validator.

Contract:
- :func:`strictify` returns a copy of the schema in which every dict holding a ``properties`` mapping gets
  ``required`` = all its property names and ``additionalProperties: false``. Every dict value is visited
  recursively, but lists (``anyOf``/``oneOf``/``allOf`` items, ...) are **not** descended into, as in
  NeMo Gym.
- :func:`validate` is ``openapi_schema_validator.validate`` (``OAS31Validator``, the library's defaults):
  it raises on an invalid schema or a non-conforming instance.
"""

from __future__ import annotations

import copy
from typing import Any

import openapi_schema_validator


def _strictify_in_place(node: dict[str, Any]) -> None:
    properties = node.get("properties")
    if isinstance(properties, dict):
        node["required"] = list(properties)
        node["additionalProperties"] = False
    for value in node.values():
        if isinstance(value, dict):
            _strictify_in_place(value)


def strictify(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` where every object with ``properties`` requires them all and forbids others."""
    strict = copy.deepcopy(schema)
    _strictify_in_place(strict)
    return strict


def validate(instance: Any, schema: Any) -> None:
    """Raise (a ``jsonschema`` error) unless ``instance`` conforms to ``schema``."""
    openapi_schema_validator.validate(instance, schema)
