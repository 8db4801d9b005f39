"""Language identification for the language checks, with ``langdetect`` (profiles ship in its wheel).

Contract: :func:`detect_language` returns an ISO 639-1 code, or ``None`` when langdetect cannot decide
(for example text with no letters); the checks then count the instruction as followed, like IFEval.
langdetect is randomised; we fix its seed (``DetectorFactory.seed = 0``) so a reward is reproducible.
NeMo Gym does not fix it, so its answer on borderline text can vary between runs.
"""

from __future__ import annotations

from langdetect import DetectorFactory, LangDetectException, detect  # type: ignore[import-untyped]

DetectorFactory.seed = 0


def detect_language(text: str) -> str | None:
    """The most likely language code of ``text``, or ``None`` when it cannot be detected."""
    try:
        return str(detect(text))
    except LangDetectException:
        return None
