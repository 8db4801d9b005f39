"""The optional LLM-judge path of ``math_with_judge``: prompt building, verdict parsing, the two-order judge.

Contract (``docs/reference/environments.md`` §8 and §0.5: the judge path and the failsafe):

- :func:`build_judge_params` deep-copies the configured ``judge_responses_create_params`` and replaces its
  ``input`` with the Arena-Hard-style system message and the ``<|Problem|> … A … B`` user message.
- :func:`parse_verdict`: "equal" iff the last output item is a message whose last content part is
  ``output_text`` containing ``[[A=B]]``, and ``[[A!=B]]`` is absent or comes later. Anything else —
  including an unreadable or empty reply — is "not equal" (never a failure).
- :func:`judge`: call 1 with A = expected answer, B = judged answer; if equal, call 2 with the order swapped.
  Reward 1.0 iff both calls say equal. Returns the reward and the evaluations made (1 or 2).
- The HTTP call is the caller's ``post`` callable (the server wires it to ``judge_model_server`` at
  ``/v1/responses``). Any exception it raises becomes :class:`JudgeError`; the server's failsafe turns that
  into :func:`judge_failure_fields` (``reward 0.0`` + ``_ng_failure_class: "judge_failed"``), so a judge
  outage is a classified failure, never a fabricated reward.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from pydantic import BaseModel

from rewardgym.config.secrets import redact_text
from rewardgym.protocol import Message, OutputText, Response, ResponseCreateParams, keys

JUDGE_FAILED: Final = "judge_failed"
"""Value of ``_ng_failure_class`` for a judge HTTP failure."""

FAILURE_JUDGE_ERROR: Final = "_ng_failure_judge_error"
"""Row key holding ``"<ExcType>: <message>"`` of the judge failure."""

EQUAL_LABEL: Final = "[[A=B]]"
NOT_EQUAL_LABEL: Final = "[[A!=B]]"

JUDGE_SYSTEM_MESSAGE: Final = (
    "Please act as an impartial judge and evaluate the equivalence of the solutions given by two AI "
    "assistants to the mathematical problem displayed below. You will be given AI assistant A's answer and "
    "AI assistant B's answer. Your job is to evaluate whether assistant A's answer is equivalent to "
    "assistant B's answer.\n\n"
    "Consider the mathematical equivalence of the AI assistants' answers above all other considerations. "
    "If the problem requests special formatting instructions, you may disregard any formatting "
    "considerations when evaluating the answers -- consider only mathematical equivalence.\n\n"
    "After evaluating both answers for equivalence, you must output only one of the following choices as "
    "your final verdict with a label:\n\n"
    "1.  The AI assistants' answers are equivalent: [[A=B]]\n"
    "2.  The AI assistants' answers are different: [[A!=B]]\n\n"
    'Example output: "My final verdict is different [[A!=B]]".'
)
"""The judge's system message (as recorded in NeMo Gym's example rollouts)."""

JUDGE_PROMPT_TEMPLATE: Final = (
    "<|Problem|>\n{question}\n\n"
    "<|Start of Assistant A's Answer|>\n{first_answer}\n<|End of Assistant A's Answer|>\n\n"
    "<|Start of Assistant B's Answer|>\n{second_answer}\n<|End of Assistant B's Answer|>"
)
"""The judge's user message; ``str.format`` fields ``question``, ``first_answer``, ``second_answer``."""

JudgePost = Callable[[ResponseCreateParams], Awaitable[Response]]
"""POSTs a Responses API request to the judge model server and returns its reply (raises on failure)."""


class JudgeError(Exception):
    """A judge call failed (transport, timeout, auth, non-2xx or an unreadable body)."""


class JudgeEvaluation(BaseModel):
    """One judge call: what was sent and what came back (an element of ``judge_evaluations``)."""

    responses_create_params: ResponseCreateParams
    """The request sent to the judge model."""

    response: Response
    """The judge model's reply."""


def judge_user_message(question: str, first_answer: str, second_answer: str) -> str:
    """The ``<|Problem|>`` prompt comparing answer A (``first_answer``) with answer B."""
    return JUDGE_PROMPT_TEMPLATE.format(
        question=question, first_answer=first_answer, second_answer=second_answer
    )


def build_judge_params(
    base: ResponseCreateParams, question: str, first_answer: str, second_answer: str
) -> ResponseCreateParams:
    """A deep copy of ``base`` whose ``input`` is the judge's system + user messages."""
    params = base.model_copy(deep=True)
    params.input = [
        Message(type="message", role="system", content=JUDGE_SYSTEM_MESSAGE),
        Message(
            type="message", role="user", content=judge_user_message(question, first_answer, second_answer)
        ),
    ]
    return params


def parse_verdict(reply: Response) -> bool:
    """True iff the judge said "equal" (see the module docstring); malformed replies are "not equal"."""
    if not reply.output:
        return False
    last = reply.output[-1]
    if not isinstance(last, Message) or isinstance(last.content, str) or not last.content:
        return False
    part = last.content[-1]
    if not isinstance(part, OutputText):
        return False
    equal_at = part.text.find(EQUAL_LABEL)
    not_equal_at = part.text.find(NOT_EQUAL_LABEL)
    return equal_at >= 0 and (not_equal_at < 0 or equal_at < not_equal_at)


async def evaluate(
    base: ResponseCreateParams, question: str, first_answer: str, second_answer: str, post: JudgePost
) -> tuple[bool, JudgeEvaluation]:
    """One judge call: ``(equal, evaluation)``; raises :class:`JudgeError` when the call fails."""
    params = build_judge_params(base, question, first_answer, second_answer)
    try:
        reply = await post(params)
    except JudgeError:
        raise
    except Exception as exc:
        raise JudgeError(f"{type(exc).__name__}: {exc}") from exc
    return parse_verdict(reply), JudgeEvaluation(responses_create_params=params, response=reply)


async def judge(
    base: ResponseCreateParams, question: str, expected_answer: str, judged_answer: str, post: JudgePost
) -> tuple[float, list[JudgeEvaluation]]:
    """Ask the judge in both orders; ``(reward, evaluations)`` — 1.0 only if both orders say equal."""
    first_equal, first = await evaluate(base, question, expected_answer, judged_answer, post)
    if not first_equal:
        return 0.0, [first]
    second_equal, second = await evaluate(base, question, judged_answer, expected_answer, post)
    return (1.0 if second_equal else 0.0), [first, second]


def judge_failure_fields(error: JudgeError) -> dict[str, Any]:
    """The fields the failsafe adds to the request dump when the judge failed (secrets redacted)."""
    return {
        keys.REWARD: 0.0,
        keys.FAILURE_CLASS: JUDGE_FAILED,
        FAILURE_JUDGE_ERROR: redact_text(f"{type(error).__name__}: {error}"),
    }
