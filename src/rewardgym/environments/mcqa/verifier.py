"""``mcqa`` verify: grade the answer letter of a multiple-choice question against the gold letter.

Contract (NeMo Gym ``resources_servers/mcqa``, ``docs/reference/environments.md`` §3):

- Row fields read: ``options``, ``expected_answer``, ``grading_mode`` (row level, three modes; anything else
  is a validation error naming ``grading_mode``), ``template_metadata.output_regex``. ``uuid`` and
  ``metadata`` are accepted and ignored; undeclared fields are ignored.
- Text graded: ``output_text(response).strip()`` (all ``output_text`` parts of all message items). Empty text
  → reward 0.0 and ``extracted_answer`` null (this covers "no assistant message").
- The template regex runs first; if it yields nothing the effective mode runs:
  ``config.grading_mode or row.grading_mode`` (the config may also say ``lenient_answer_colon_md``).
- ``reward = 1.0`` iff the letter is not null, the gold (``expected_answer.strip().upper()``) is not empty
  and they are equal. The response carries exactly ``responses_create_params, response, reward,
  expected_answer`` (the normalised gold) and ``extracted_answer``.
- A template pattern with two or more groups raises :class:`rewardgym.errors.DataError` naming the field
  (NeMo Gym fails the request with HTTP 500; no reward is invented).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from rewardgym.environments.mcqa import extraction
from rewardgym.errors import DataError
from rewardgym.protocol import ReverifyMode, VerifyRequest, VerifyResponse, output_text

RowGradingMode = Literal["strict_single_letter_boxed", "lenient_boxed", "lenient_answer_colon"]
"""Grading modes a row may ask for."""

GradingMode = Literal[
    "strict_single_letter_boxed", "lenient_boxed", "lenient_answer_colon", "lenient_answer_colon_md"
]
"""Grading modes the environment config may force (adds the markdown-aware ``Answer:`` mode)."""


class MCQAConfig(BaseModel):
    """Environment config of ``mcqa`` (the ``resources_servers.mcqa`` block of ``configs/mcqa.yaml``)."""

    model_config = ConfigDict(extra="forbid")

    REVERIFY_MODE: ClassVar[ReverifyMode] = ReverifyMode.STATELESS

    grading_mode: GradingMode | None = None
    """When set, overrides every row's ``grading_mode``; null (the default) uses the row's."""


class TemplateMetadata(BaseModel):
    """The row's ``template_metadata``; only ``output_regex`` is used, other keys are kept and ignored."""

    model_config = ConfigDict(extra="allow")

    output_regex: str | list[str] | None = None
    """A regex (or regexes tried in order) whose last case-insensitive ``findall`` hit is the answer."""


class MCQAVerifyRequest(VerifyRequest):
    """A ``mcqa`` row plus the episode's final response."""

    model_config = ConfigDict(extra="ignore")

    options: list[dict[str, str | None]] | None = None
    """Single-key dicts ``{letter: text}``; letters with a null text are not allowed answers."""

    expected_answer: str | None = None
    """The gold letter; missing or blank means the reward is always 0."""

    grading_mode: RowGradingMode = "strict_single_letter_boxed"
    """How the letter is extracted when no template regex matched."""

    template_metadata: TemplateMetadata | None = None
    """Optional prompt-template data; ``output_regex`` is tried before the grading mode."""

    uuid: str | None = None
    """Row identifier (ignored)."""

    metadata: dict[str, Any] | None = None
    """Free-form row data (ignored, never used for grading)."""


class MCQAVerifyResponse(VerifyResponse):
    """``mcqa`` verify result; its fields are the rollout row's columns."""

    expected_answer: str
    """The gold letter, stripped and upper-cased ("" when the row had none)."""

    extracted_answer: str | None
    """The extracted letter, or null when none could be read."""


def extract_letter(text: str, body: MCQAVerifyRequest, config: MCQAConfig) -> str | None:
    """The answer letter of ``text`` (already stripped, non-empty) under the row and config rules."""
    options = body.options
    allowed = extraction.allowed_letters(options)
    letter: str | None = None
    template = body.template_metadata
    if template is not None and template.output_regex is not None:
        try:
            letter = extraction.template_letter(text, template.output_regex, options, allowed)
        except extraction.TemplateRegexError as exc:
            raise DataError(str(exc)) from exc
    if letter is not None:
        return letter
    mode: GradingMode = config.grading_mode or body.grading_mode
    if mode == "strict_single_letter_boxed":
        return extraction.strict_boxed_letter(text, allowed)
    if mode == "lenient_boxed":
        return extraction.lenient_boxed_letter(text, options, allowed)
    if mode == "lenient_answer_colon":
        return extraction.answer_colon_letter(text, options, allowed)
    return extraction.answer_colon_md_letter(text, allowed)


def verify(body: MCQAVerifyRequest, config: MCQAConfig) -> MCQAVerifyResponse:
    """Grade one rollout (pure: no I/O)."""
    gold = (body.expected_answer or "").strip().upper()
    text = output_text(body.response).strip()
    letter = extract_letter(text, body, config) if text else None
    reward = 1.0 if letter is not None and gold and letter == gold else 0.0
    return MCQAVerifyResponse(
        responses_create_params=body.responses_create_params,
        response=body.response,
        reward=reward,
        expected_answer=gold,
        extracted_answer=letter,
    )
