"""``equivalence_rule`` verify: score the answer text against ``expected_answer`` under a configured rule.

Contract (NeMo Gym ``resources_servers/equivalence_rule``, ``docs/reference/environments.md`` §10):

- Row: ``expected_answer`` is required; every other row field is kept (``extra="allow"``) and echoed back.
- Text: ``output_text(response)`` (all ``output_text`` parts of all message items, no separator); no
  assistant message is the empty text.
- ``norm(s)``: strip, lowercase, ``\\s+`` → one space. Rules: ``exact`` (1.0/0.0 on equal norms),
  ``seq_match`` (``difflib.SequenceMatcher(None, a, b).ratio()``, autojunk on), ``weighted_seq_match``
  (``0.85·seq + 0.15·prefix``, clamped to [0, 1]; prefix = the first 10 normalised expected characters).
- ``reward = equivalence_score = score``. Response keys: ``responses_create_params, response, reward,
  equivalence_score, expected_answer`` plus the row's extra fields (an extra named ``reward`` or
  ``equivalence_score`` is replaced by the computed value).
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rewardgym.protocol import VerifyRequest, VerifyResponse, output_text

GradingRule = Literal["exact", "seq_match", "weighted_seq_match"]
"""How the answer text is compared with the expected answer."""

_WHITESPACE = re.compile(r"\s+")
_PREFIX_LENGTH = 10
_SEQ_WEIGHT = 0.85
_PREFIX_WEIGHT = 0.15


class EquivalenceRuleConfig(BaseModel):
    """Environment config of ``equivalence_rule`` (``configs/lc.yaml`` sets ``grading_rule: exact``)."""

    model_config = ConfigDict(extra="forbid")

    name: str = "equivalence_rule"
    """Server instance name (NeMo Gym's default for this environment)."""

    grading_rule: GradingRule = "exact"
    """``exact`` (normalised equality), ``seq_match`` (difflib ratio) or ``weighted_seq_match``."""


class EquivalenceRuleVerifyRequest(VerifyRequest):
    """An ``equivalence_rule`` row plus the final response; extra row fields are kept and echoed."""

    model_config = ConfigDict(extra="allow")

    expected_answer: str
    """The reference text."""


class EquivalenceRuleVerifyResponse(VerifyResponse):
    """``equivalence_rule`` verify result: the row's fields plus the score."""

    model_config = ConfigDict(extra="allow")

    equivalence_score: float
    """The rule's score in [0, 1] (equal to ``reward``)."""

    expected_answer: str
    """The row's expected answer, unchanged."""


def normalize(text: str) -> str:
    """Strip, lowercase and collapse whitespace runs to one space."""
    return _WHITESPACE.sub(" ", text.strip().lower())


def seq_ratio(response: str, answer: str) -> float:
    """``SequenceMatcher`` ratio of the normalised texts (default arguments, so autojunk is on)."""
    return float(SequenceMatcher(None, normalize(response), normalize(answer)).ratio())


def weighted_seq_ratio(response: str, answer: str) -> float:
    """``0.85 × seq_ratio + 0.15 × prefix ratio`` on the first 10 normalised answer characters, in [0, 1]."""
    response_n, answer_n = normalize(response), normalize(answer)
    full = float(SequenceMatcher(None, response_n, answer_n).ratio())
    prefix = answer_n[:_PREFIX_LENGTH]
    prefix_ratio = float(SequenceMatcher(None, response_n[: len(prefix)], prefix).ratio())
    return max(0.0, min(1.0, _SEQ_WEIGHT * full + _PREFIX_WEIGHT * prefix_ratio))


def exact(response: str, answer: str) -> float:
    """1.0 when the normalised texts are equal, else 0.0."""
    return 1.0 if normalize(response) == normalize(answer) else 0.0


def score(response: str, answer: str, rule: GradingRule) -> float:
    """The equivalence score of ``response`` against ``answer`` under ``rule``."""
    if rule == "seq_match":
        return seq_ratio(response, answer)
    if rule == "weighted_seq_match":
        return weighted_seq_ratio(response, answer)
    return exact(response, answer)


def verify(
    body: EquivalenceRuleVerifyRequest, config: EquivalenceRuleConfig
) -> EquivalenceRuleVerifyResponse:
    """Grade one rollout (pure: no I/O)."""
    value = score(output_text(body.response), body.expected_answer, config.grading_rule)
    extras = {k: v for k, v in (body.model_extra or {}).items() if k not in {"reward", "equivalence_score"}}
    return EquivalenceRuleVerifyResponse(
        responses_create_params=body.responses_create_params,
        response=body.response,
        reward=value,
        equivalence_score=value,
        expected_answer=body.expected_answer,
        **extras,
    )
