"""``string_match`` verify: extract a free-form answer and compare it with ``expected_answer``.

Contract (NeMo Gym ``resources_servers/string_match``, ``docs/reference/environments.md`` §9):

- Row fields read: ``expected_answer`` (required), ``extraction_mode`` (``final_answer`` by default),
  ``case_sensitive`` (false by default); ``metadata`` is accepted and ignored; other fields are ignored.
- Text: the ``text`` of every content part of every assistant message (all of them, not only the last),
  joined with ``"\\n"`` and stripped. No assistant message → no extracted answer → reward 0.0.
- Extraction by mode (:func:`extract_answer`); ``reward`` is 0.0 when nothing was extracted or the expected
  answer is empty, else ``grader.grade`` (or stripped equality when ``case_sensitive``).
- Response keys: ``responses_create_params, response, reward, expected_answer, extracted_answer``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from rewardgym.environments.boxed import last_balanced_box, unwrap_text
from rewardgym.environments.string_match.grader import grade
from rewardgym.protocol import Message, Response, VerifyRequest, VerifyResponse

ExtractionMode = Literal["boxed", "final_answer", "last_line", "full_response"]
"""Where the answer is read from."""

_FINAL_ANSWER = re.compile(r"(?i)(?:final\s+answer|answer)\s*[:：]\s*(.+)")
_TRAILING_PERIOD = re.compile(r"\.\s*$")


class StringMatchConfig(BaseModel):
    """Environment config of ``string_match``: no fields beyond the catalogue metadata."""

    model_config = ConfigDict(extra="forbid")


class StringMatchVerifyRequest(VerifyRequest):
    """A ``string_match`` row plus the episode's final response."""

    model_config = ConfigDict(extra="ignore")

    expected_answer: str
    """The reference answer (an empty one never scores)."""

    extraction_mode: ExtractionMode = "final_answer"
    """``boxed`` (last balanced box), ``final_answer`` (last ``[final] answer:`` line, else boxed),
    ``last_line`` (last non-empty line) or ``full_response`` (the whole text)."""

    case_sensitive: bool = False
    """True: exact equality after stripping; false: the NeMo RL string-match grader."""

    metadata: dict[str, Any] | None = None
    """Free-form row data (ignored)."""


class StringMatchVerifyResponse(VerifyResponse):
    """``string_match`` verify result; its fields are the rollout row's columns."""

    expected_answer: str
    """The row's expected answer, unchanged."""

    extracted_answer: str | None
    """The answer read from the text, or null when the mode found none."""


def assistant_text(response: Response) -> str:
    """Every text part of every assistant message, joined with newlines and stripped."""
    texts: list[str] = []
    for item in response.output:
        if not isinstance(item, Message) or item.role != "assistant":
            continue
        if isinstance(item.content, str):
            texts.append(item.content)
        else:
            texts.extend(
                text for part in item.content if isinstance(text := getattr(part, "text", None), str)
            )
    return "\n".join(texts).strip()


def extract_boxed(text: str) -> str | None:
    r"""Inner text of the last ``\boxed{`` whose braces balance (earlier boxes are tried next)."""
    inner = last_balanced_box(text)
    return None if inner is None else unwrap_text(inner.strip()).strip()


def extract_final_answer(text: str) -> str | None:
    """The last ``final answer:`` / ``answer:`` value without its trailing period(s)."""
    hits = _FINAL_ANSWER.findall(text)
    if not hits:
        return None
    value: str = hits[-1].strip()
    value = _TRAILING_PERIOD.split(value)[0].strip()
    return value.rstrip(".")


def extract_last_line(text: str) -> str | None:
    """The last non-empty line, stripped."""
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return None


def extract_answer(text: str, mode: ExtractionMode) -> str | None:
    """The answer of ``text`` under ``mode`` (``final_answer`` falls back to ``boxed``)."""
    if mode == "boxed":
        return extract_boxed(text)
    if mode == "final_answer":
        found = extract_final_answer(text)
        return found if found is not None else extract_boxed(text)
    if mode == "last_line":
        return extract_last_line(text)
    return text.strip() or None


def score(extracted: str | None, expected: str, case_sensitive: bool) -> float:
    """The reward of an extracted answer."""
    if extracted is None or not expected:
        return 0.0
    if case_sensitive:
        return 1.0 if extracted.strip() == expected.strip() else 0.0
    return grade(expected, extracted)


def verify(body: StringMatchVerifyRequest, config: StringMatchConfig) -> StringMatchVerifyResponse:
    """Grade one rollout (pure: no I/O). ``config`` has no fields; it is taken for a uniform signature."""
    del config
    extracted = extract_answer(assistant_text(body.response), body.extraction_mode)
    return StringMatchVerifyResponse(
        responses_create_params=body.responses_create_params,
        response=body.response,
        reward=score(extracted, body.expected_answer, body.case_sensitive),
        expected_answer=body.expected_answer,
        extracted_answer=extracted,
    )
