r"""The symbolic ("library") check of ``math_with_judge``: math-verify 0.8.0 in a killable child process.

Contract (``docs/reference/environments.md`` §8, library path):

- :func:`gold_for_math_verify`: strip ``expected_answer``; drop one outer ``\(...\)`` then one outer
  ``$...$`` (stripping after each); wrap in ``\boxed{...}``.
- :func:`math_verify_check` (runs in the child): ``math_metric(gold=(LatexExtractionConfig(),),
  pred=(ExprExtractionConfig(), LatexExtractionConfig()))`` with math-verify's other defaults, called as
  ``metric([gold], [generated])`` → ``library_reward = float(score)``; ``extracted_answer`` is the first
  predicted string that ``grader.verify`` accepts against some gold string, else the first prediction, else
  null. Any exception (including math-verify's ``TimeoutException``) gives ``(0.0, None)``.
- :class:`LibraryVerifier.check` runs it in a killable child of a :class:`~.killable.ForkWorker` helper (which
  imports math-verify and warms it up once) with a hard timeout, at most ``max_concurrency`` children at a
  time; a timeout, crash or error gives ``(0.0, None)``. A helper that cannot import math-verify raises
  :class:`~rewardgym.errors.ServerError` instead.

math-verify applies its own 5 s alarms to parsing and to each comparison (NeMo Gym keeps those defaults, and
so do we), so a comparison that needs more CPU time than that scores 0.0 on a slow machine.
"""

from __future__ import annotations

import asyncio
import logging
from types import TracebackType
from typing import Any

from rewardgym.environments.math_with_judge.killable import ForkWorker

LibraryResult = tuple[float, str | None]
"""``(library_reward, extracted_answer)``."""

FAILED: LibraryResult = (0.0, None)

WARMUP_MODULE = "rewardgym.environments.math_with_judge.warmup"
"""Imported by the fork helper before any job: loads math-verify and grades one answer."""


def gold_for_math_verify(expected_answer: str) -> str:
    r"""``\boxed{...}`` around the expected answer without its outer ``\(...\)`` / ``$...$`` delimiters."""
    text = expected_answer.strip()
    if text.startswith("\\(") and text.endswith("\\)"):
        text = text[2:-2].strip()
    if text.startswith("$") and text.endswith("$") and len(text) > 1:
        text = text[1:-1].strip()
    return "\\boxed{" + text + "}"


def _first_verified(golds: list[str], predictions: list[str], verify: Any) -> str | None:
    for prediction in predictions:
        if any(verify(gold, prediction) for gold in golds):
            return prediction
    return predictions[0] if predictions else None


def math_verify_check(expected_answer: str, generated: str) -> LibraryResult:
    """The library result of one answer; runs math-verify in the *current* process (call it in a child)."""
    from math_verify import grader
    from math_verify.errors import TimeoutException
    from math_verify.metric import math_metric
    from math_verify.parser import ExprExtractionConfig, LatexExtractionConfig

    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    try:
        metric = math_metric(
            gold_extraction_target=(LatexExtractionConfig(),),
            pred_extraction_target=(ExprExtractionConfig(), LatexExtractionConfig()),
        )
        score, extracted = metric([gold_for_math_verify(expected_answer)], [generated])
        reward = float(score)
        if extracted is None:
            return reward, None
        golds, predictions = extracted
        return reward, _first_verified(list(golds), list(predictions), grader.verify)
    except (Exception, TimeoutException):
        return FAILED


class LibraryVerifier:
    """Runs :func:`math_verify_check` in killable children, bounded in time and in concurrency.

    One instance belongs to one event loop; close it with :meth:`aclose` (or use ``async with``)."""

    def __init__(self, timeout_s: float = 10.0, max_concurrency: int = 32) -> None:
        self.timeout_s = timeout_s
        self._slots = asyncio.Semaphore(max_concurrency)
        self._worker = ForkWorker(preload=(WARMUP_MODULE,))

    async def __aenter__(self) -> LibraryVerifier:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the fork helper process."""
        await self._worker.aclose()

    async def check(self, expected_answer: str, generated: str) -> LibraryResult:
        """``(library_reward, extracted_answer)``; ``(0.0, None)`` on timeout, crash or error."""
        async with self._slots:
            outcome = await self._worker.run(
                math_verify_check, (expected_answer, generated), timeout_s=self.timeout_s
            )
        if outcome.failure is not None:
            return FAILED
        reward, extracted = outcome.value
        return float(reward), None if extracted is None else str(extracted)
