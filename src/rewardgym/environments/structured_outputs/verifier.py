"""Verifier of ``structured_outputs``: does the answer parse and validate against the row's JSON Schema?

Contract (NeMo Gym semantics; content correctness is not checked):
- ``response_mode: text`` (default): the text is :func:`rewardgym.protocol.output_text` (nothing stripped,
  so a markdown code fence fails JSON parsing). Steps, the first failure naming ``error_type``:
  blank text ``empty_response``; ``schema_str`` not JSON ``schema_error``; parse by ``schema_type``
  ``parse_error``; coercion (XML when ``xml_coerce_types``, CSV always); validation ``validation_error``.
- ``response_mode: tool_call``: the payload comes from the single function call
  (:mod:`.tool_call`), then is validated; ``schema_type`` is ignored.
- The schema is strictified (:func:`.schema.strictify`) in both modes. ``reward`` is 1.0 iff validation
  passed; ``error_type``/``error_message`` are ``null`` on success. Validation messages are
  ``"<ExcType>: <message[:200]>"``.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel

from rewardgym.environments.structured_outputs.parsing import (
    SchemaType,
    coerce_csv,
    coerce_xml,
    parse_text,
)
from rewardgym.environments.structured_outputs.schema import strictify, validate
from rewardgym.environments.structured_outputs.tool_call import MESSAGE_LIMIT, AnswerError, tool_call_payload
from rewardgym.protocol import VerifyRequest, VerifyResponse, output_text


class StructuredOutputsConfig(BaseModel):
    """Environment config of ``structured_outputs``."""

    xml_coerce_types: bool = True
    """Convert XML string leaves to the schema's integer/number/boolean types (and fix array artefacts)."""


class DescriptiveFields(BaseModel):
    """Row fields that are only echoed (used for metric breakdowns); ``null`` when the row lacks them."""

    problem_type: str | None = None
    """Kind of problem, e.g. ``direct_tool_call``."""
    schema_repr: str | None = None
    """How the schema was shown to the model, e.g. ``tool``."""
    source_format: str | None = None
    """Format of the source document."""
    num_turns: int | None = None
    """Number of conversation turns."""
    source_record_id: str | None = None
    """Id of the source record."""
    tool_schema_mode: str | None = None
    """How the schema is wrapped in the tool, e.g. ``extraction_wrapper``."""
    tool_choice: str | dict[str, Any] | None = None
    """Descriptive copy of the tool choice (separate from ``responses_create_params.tool_choice``)."""
    parallel_tool_calls: bool | None = None
    """Descriptive copy (separate from ``responses_create_params.parallel_tool_calls``)."""
    source_schema_type: str | None = None
    """Schema type of the source document."""
    num_tools: int | None = None
    """Number of tools offered."""
    num_distractors: int | None = None
    """Number of distractor tools."""
    has_distractors: bool | None = None
    """Whether distractor tools are offered."""
    instruction_layout: str | None = None
    """Where the instruction sits relative to the document."""
    instruction_detail_level: str | None = None
    """How detailed the instruction is."""
    system_instruction_style: str | None = None
    """Style of the system instruction."""
    tool_name_style: str | None = None
    """How tools are named."""
    distractor_style: str | None = None
    """How distractors are built."""
    tool_union_mode: str | None = None
    """How union types are offered as tools."""


class StructuredOutputsVerifyRequest(VerifyRequest, DescriptiveFields):
    """A row of ``structured_outputs`` plus the episode's final response."""

    schema_str: str
    """The JSON Schema, serialised as JSON (required)."""
    schema_type: SchemaType = "json"
    """Format the text answer must be in (ignored in ``tool_call`` mode)."""
    response_mode: Literal["text", "tool_call"] = "text"
    """Whether the answer is the message text or the arguments of one function call."""
    tool_name: str | None = None
    """Expected function name in ``tool_call`` mode (any name when unset)."""
    tool_payload_key: str | None = None
    """Key of the call arguments holding the payload in ``tool_call`` mode (all arguments when unset)."""


class StructuredOutputsVerifyResponse(VerifyResponse, DescriptiveFields):
    """Verify result; the extra keys are the rollout columns NeMo Gym writes."""

    schema_str: str
    """The row's schema, echoed."""
    schema_type: SchemaType
    """The row's schema type, echoed."""
    error_type: str | None = None
    """The failing step (``empty_response``, ``parse_error``, ``validation_error``, ...) or ``null``."""
    error_message: str | None = None
    """What went wrong, or ``null`` on success."""


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:MESSAGE_LIMIT]}"


def _text_payload(
    body: StructuredOutputsVerifyRequest, text: str, schema: Any, config: StructuredOutputsConfig
) -> Any:
    try:
        data = parse_text(text, body.schema_type)
    except Exception as exc:
        raise AnswerError("parse_error", _describe(exc)) from exc
    if body.schema_type == "xml" and config.xml_coerce_types:
        return coerce_xml(data, schema)
    if body.schema_type == "csv":
        return coerce_csv(data, schema)
    return data


def _check(body: StructuredOutputsVerifyRequest, config: StructuredOutputsConfig) -> None:
    """Raise :class:`AnswerError` unless the answer validates."""
    if body.response_mode == "tool_call":
        payload = tool_call_payload(body.response, body.tool_name, body.tool_payload_key)
        schema = _load_schema(body.schema_str)
    else:
        text = output_text(body.response)
        if not text.strip():
            raise AnswerError("empty_response", "the response has no text")
        schema = _load_schema(body.schema_str)
        payload = _text_payload(body, text, schema, config)
    try:
        validate(payload, schema)
    except Exception as exc:
        raise AnswerError("validation_error", _describe(exc)) from exc


def _load_schema(schema_str: str) -> Any:
    try:
        schema = json.loads(schema_str)
    except ValueError as exc:
        raise AnswerError("schema_error", _describe(exc)) from exc
    return strictify(schema) if isinstance(schema, dict) else schema


def verify(
    body: StructuredOutputsVerifyRequest, config: StructuredOutputsConfig
) -> StructuredOutputsVerifyResponse:
    """Score one rollout (pure; no I/O)."""
    error: AnswerError | None = None
    try:
        _check(body, config)
    except AnswerError as exc:
        error = exc
    descriptive = {name: getattr(body, name) for name in DescriptiveFields.model_fields}
    return StructuredOutputsVerifyResponse(
        responses_create_params=body.responses_create_params,
        response=body.response,
        reward=0.0 if error else 1.0,
        schema_str=body.schema_str,
        schema_type=body.schema_type,
        error_type=error.error_type if error else None,
        error_message=error.message if error else None,
        **descriptive,
    )
