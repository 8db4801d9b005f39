"""``code_gen`` verify: extract the last fenced code block, run it against the row's unit tests, sandboxed.

Contract (``docs/reference/environments.md`` §12; run and grading details in :mod:`.grading` and
:mod:`.sandbox`):

1. ``out = output_text(response)``. Empty or whitespace (this covers "no assistant message") → reward 0.0,
   every extra null except ``difficulty`` (and ``reasoning_format_violation_rate``, a float, 0.0).
2. Extraction: the lines (``out.split("\\n")``) strictly between the last two lines containing a triple
   backtick. Fewer than two such lines, or nothing between them → reward 0.0 with only
   ``extracted_model_output`` (and ``difficulty``) set.
3. Otherwise the code runs in the sandbox (raises :class:`~.sandbox.SandboxUnavailableError` /
   :class:`~.sandbox.SandboxError` when it cannot run safely: an infrastructure fault, never a reward).
4. Reasoning-format violation: ``<think>`` or ``</think>`` in ``out``, or more than one of either in the
   concatenated reasoning summaries. Then ``reward = reasoning_format_penalty``; otherwise 1.0 iff every
   element of ``result`` is ``True`` (no tests → 1.0), else 0.0.

Row fields read: ``verifier_metadata.unit_tests`` (required here; see README) and the optional
``verifier_metadata.difficulty``. The response carries exactly ``responses_create_params, response, reward,
extracted_model_output, extracted_model_code, result, metadata, unit_tests_time_taken,
reasoning_format_violation_rate, difficulty``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from rewardgym.environments.code_gen.config import CodeGenConfig
from rewardgym.environments.code_gen.grading import UnitTests, run_unit_tests
from rewardgym.environments.code_gen.sandbox import CodeSandbox, shared_sandbox
from rewardgym.protocol import Reasoning, Response, VerifyRequest, VerifyResponse, output_text

__all__ = [
    "CodeGenConfig",
    "CodeGenVerifyRequest",
    "CodeGenVerifyResponse",
    "VerifierMetadata",
    "extract_code",
    "has_reasoning_format_violation",
    "verify",
]

FENCE = "```"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


class VerifierMetadata(BaseModel):
    """The row's ``verifier_metadata``; other keys are accepted and ignored."""

    model_config = ConfigDict(extra="allow")

    unit_tests: UnitTests
    """The tests the solution must pass."""

    difficulty: str | None = None
    """Optional difficulty label, echoed in the response (used for per-difficulty metrics)."""


class CodeGenVerifyRequest(VerifyRequest):
    """A ``code_gen`` row plus the final response (``dataset``, ``source``, ``hash_id`` … are ignored)."""

    model_config = ConfigDict(extra="ignore")

    verifier_metadata: VerifierMetadata
    """Unit tests and difficulty of the problem."""


class CodeGenVerifyResponse(VerifyResponse):
    """The verify answer (the keys of NeMo Gym's code_gen rollouts)."""

    extracted_model_output: str | None = None
    """The model's final text (``output_text``), when non-empty."""

    extracted_model_code: str | None = None
    """The code that was run, when a fenced block was found."""

    result: list[bool | int] | None = None
    """Per test ``True``, or the failure code (-1 killed run, -2 wrong answer, -3 time limit, -4 error)."""

    metadata: dict[str, Any] | None = None
    """Failure details (``inputs``, ``expected``, ``output``, ``error_code``, ``error_message`` …) or
    ``{"execution time": seconds}``."""

    unit_tests_time_taken: float | None = None
    """Wall-clock seconds of the sandboxed run (excluding the wait for a free slot)."""

    reasoning_format_violation_rate: float = 0.0
    """1.0 when ``<think>`` tags are misplaced (the reward is then ``reasoning_format_penalty``), else 0.0."""

    difficulty: str | None = None
    """``verifier_metadata.difficulty``."""


def extract_code(text: str) -> str:
    """The lines strictly between the last two lines containing a triple backtick (``""`` if fewer)."""
    lines = text.split("\n")
    fences = [i for i, line in enumerate(lines) if FENCE in line]
    if len(fences) < 2:
        return ""
    return "\n".join(lines[fences[-2] + 1 : fences[-1]])


def has_reasoning_format_violation(response: Response) -> bool:
    """Think tags in the final text, or more than one opening/closing tag in the reasoning summaries."""
    final = output_text(response)
    if THINK_OPEN in final or THINK_CLOSE in final:
        return True
    reasoning = "".join(
        part.text for item in response.output if isinstance(item, Reasoning) for part in item.summary
    )
    return reasoning.count(THINK_OPEN) > 1 or reasoning.count(THINK_CLOSE) > 1


async def verify(
    body: CodeGenVerifyRequest, config: CodeGenConfig, sandbox: CodeSandbox | None = None
) -> CodeGenVerifyResponse:
    """Score the episode (see the module docstring); ``sandbox`` defaults to :func:`.shared_sandbox`."""
    out = output_text(body.response)
    base: dict[str, Any] = {
        "responses_create_params": body.responses_create_params,
        "response": body.response,
        "reward": 0.0,
        "extracted_model_output": None,
        "extracted_model_code": None,
        "result": None,
        "metadata": None,
        "unit_tests_time_taken": None,
        "reasoning_format_violation_rate": 0.0,
        "difficulty": body.verifier_metadata.difficulty,
    }
    if not out.strip():
        return CodeGenVerifyResponse(**base)
    base["extracted_model_output"] = out
    code = extract_code(out)
    if not code:
        return CodeGenVerifyResponse(**base)
    result, metadata, seconds = await run_unit_tests(
        code, body.verifier_metadata.unit_tests, sandbox or shared_sandbox(config)
    )
    violation = has_reasoning_format_violation(body.response)
    passed = 1.0 if all(r is True for r in result) else 0.0
    reward = config.reasoning_format_penalty if violation else passed
    return CodeGenVerifyResponse(
        **base
        | {
            "reward": reward,
            "extracted_model_code": code,
            "result": result,
            "metadata": metadata,
            "unit_tests_time_taken": seconds,
            "reasoning_format_violation_rate": 1.0 if violation else 0.0,
        }
    )
