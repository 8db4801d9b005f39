"""Aggregate-metric intent of ``math_with_judge`` (declarative; the server base computes the numbers).

Contract (NeMo Gym ``LibraryJudgeMathResourcesServer.compute_metrics`` / ``get_key_metrics``):

- ``compute_metrics`` = pass@k / pass@1[avg-of-k] / majority@k over :func:`score_fn` — ``symbolic_accuracy``
  (the row's ``library_reward``) always, ``judge_accuracy`` (the row's ``reward``) only for rows the judge
  ruled on — with :data:`ANSWER_KEY` for majority voting and the ``no_answer`` score.
- ``get_key_metrics`` picks ``mean/input_tokens`` and ``mean/output_tokens`` (when present), then the
  highest-k entries of each :data:`KEY_METRICS_HIGHEST_K` family.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

SCORE_FIELDS: Final[Mapping[str, str]] = {"symbolic_accuracy": "library_reward", "judge_accuracy": "reward"}
"""Score name → rollout row field; ``judge_accuracy`` counts only when ``judge_evaluations`` is not null."""

ANSWER_KEY: Final = "extracted_answer"
"""Row field used for majority@k and the ``no_answer`` score."""

KEY_METRICS_FIRST: Final[tuple[str, ...]] = ("mean/input_tokens", "mean/output_tokens")
"""Exact agent-metric keys copied first into the key metrics (when present)."""

KEY_METRICS_HIGHEST_K: Final[tuple[tuple[str, tuple[str, ...] | None, tuple[str, ...]], ...]] = (
    ("pass@1[avg-of-{k}]", None, ()),
    ("pass@{k}", None, ("no_answer",)),
    ("majority@{k}", None, ("no_answer",)),
)
"""``(family, score names or None for all, excluded names)``: entries taken at the largest ``k``."""

KEY_METRICS_LAST: Final[tuple[str, ...]] = ()
"""Exact agent-metric keys copied last (none for this environment)."""


def score_fn(row: Mapping[str, Any]) -> dict[str, float]:
    """Per-rollout scores: ``symbolic_accuracy`` when the row has ``library_reward``; ``judge_accuracy`` when
    the judge was asked (``judge_evaluations`` not null)."""
    scores: dict[str, float] = {}
    if "library_reward" in row:
        scores["symbolic_accuracy"] = float(row["library_reward"])
    if row.get("judge_evaluations") is not None:
        scores["judge_accuracy"] = float(row["reward"])
    return scores
