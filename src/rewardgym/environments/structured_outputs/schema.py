"""JSON Schema handling of ``structured_outputs``: strictify, then validate with the OpenAPI 3.1 validator.

Contract:
- :func:`strictify` returns a copy of the schema in which every dict holding a ``properties`` mapping gets
  ``required`` = all its property names and ``additionalProperties: false``. Every dict value is visited
  recursively, but lists (``anyOf``/``oneOf``/``allOf`` items, ...) are **not** descended into, as in
  NeMo Gym.
- :func:`validate` behaves as ``openapi_schema_validator.validate`` (``OAS31Validator``, the library's
  defaults): it raises ``SchemaError`` on an invalid schema, else the best-matching ``ValidationError`` of a
  non-conforming instance. Checking a schema against the meta-schema costs far more than validating one
  instance, and every rollout of a task repeats its schema, so the checked validator of each distinct schema
  is kept (bounded LRU, keyed by the schema's JSON text).
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

import orjson
from jsonschema.exceptions import SchemaError, best_match
from openapi_schema_validator import OAS31Validator


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


@lru_cache(maxsize=1024)
def _checked_validator(schema_json: bytes) -> OAS31Validator | SchemaError:
    schema = orjson.loads(schema_json)
    try:
        OAS31Validator.check_schema(schema)
    except SchemaError as exc:
        return exc
    return OAS31Validator(schema)


def validate(instance: Any, schema: Any) -> None:
    """Raise (a ``jsonschema`` error) unless ``instance`` conforms to ``schema``."""
    try:
        schema_json = orjson.dumps(schema)  # key order kept: error messages print the schema as given
    except TypeError:  # not JSON-serialisable (cannot come from a JSON row): check it uncached
        OAS31Validator.check_schema(schema)
        checked: OAS31Validator | SchemaError = OAS31Validator(schema)
    else:
        checked = _checked_validator(schema_json)
    if isinstance(checked, SchemaError):
        raise copy.copy(checked)  # a fresh error each time: the cached one keeps no traceback
    error = best_match(checked.iter_errors(instance))
    if error is not None:
        raise error
