"""The cached validator answers exactly as ``openapi_schema_validator.validate``, every time."""

from __future__ import annotations

from typing import Any

import openapi_schema_validator
import pytest

from rewardgym.environments.structured_outputs.schema import strictify, validate

SCHEMA = strictify({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}})


def outcome(check: Any, instance: Any, schema: Any) -> tuple[str, str]:
    try:
        check(instance, schema)
    except Exception as exc:
        return type(exc).__name__, str(exc)
    return "ok", ""


@pytest.mark.parametrize(
    ("instance", "schema"),
    [
        ({"n": 1, "s": "x"}, SCHEMA),
        ({"n": "1", "s": "x"}, SCHEMA),
        ({"n": 1}, SCHEMA),
        ({"n": 1, "s": "x", "extra": True}, SCHEMA),
        ({"n": 1}, {"type": 12}),  # an invalid schema
        ([1, 2], {"type": "array", "items": {"type": "integer"}, "maxItems": 1}),
    ],
)
def test_same_answer_as_the_library_and_on_every_call(instance: Any, schema: Any) -> None:
    expected = outcome(openapi_schema_validator.validate, instance, schema)
    assert outcome(validate, instance, schema) == expected
    assert outcome(validate, instance, schema) == expected  # the cached path


def test_equal_schemas_with_other_key_order_are_validated_alike() -> None:
    reordered = {"properties": SCHEMA["properties"], "additionalProperties": False, **SCHEMA}
    assert outcome(validate, {"n": "x", "s": "y"}, reordered)[0] == "ValidationError"
    assert outcome(validate, {"n": 2, "s": "y"}, reordered) == ("ok", "")
