"""Aggregate-metric intent of ``mcqa`` (declarative; the server base computes the numbers).

Contract (NeMo Gym ``MCQAResourcesServer.compute_metrics`` / ``get_key_metrics``):

- ``compute_metrics`` = pass@k / pass@1[avg-of-k] / majority@k over the scores of :func:`score_fn`
  (``accuracy`` = the row's ``reward``), with :data:`ANSWER_KEY` as the answer for majority voting and the
  binary ``no_answer`` score (answer is null).
- ``get_key_metrics`` picks, in this order: ``mean/reward``; the highest-k entries of each
  :data:`KEY_METRICS_HIGHEST_K` pattern restricted to its score names; then ``pass@1/accuracy``
  (each exact key only when present in the agent metrics).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

SCORE_FIELDS: Final[Mapping[str, str]] = {"accuracy": "reward"}
"""Score name → rollout row field holding its per-rollout value."""

ANSWER_KEY: Final = "extracted_answer"
"""Row field used for majority@k and the ``no_answer`` score."""

KEY_METRICS_FIRST: Final[tuple[str, ...]] = ("mean/reward",)
"""Exact agent-metric keys copied first into the key metrics (when present)."""

KEY_METRICS_HIGHEST_K: Final[tuple[tuple[str, tuple[str, ...] | None, tuple[str, ...]], ...]] = (
    ("pass@1[avg-of-{k}]", ("accuracy", "no_answer"), ()),
    ("pass@{k}", ("no_answer",), ()),
    ("majority@{k}", ("accuracy",), ()),
)
"""``(pattern, score names or None for all, excluded names)``: entries taken at the largest ``k``."""

KEY_METRICS_LAST: Final[tuple[str, ...]] = ("pass@1/accuracy",)
"""Exact agent-metric keys copied last into the key metrics (when present)."""


def score_fn(row: Mapping[str, Any]) -> dict[str, float]:
    """Per-rollout scores for pass@k and majority@k: ``{"accuracy": reward}``."""
    return {name: float(row[field]) for name, field in SCORE_FIELDS.items()}
