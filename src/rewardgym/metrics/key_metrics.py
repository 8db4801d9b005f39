"""Key metrics: the headline entries picked from an agent's metrics (pure functions).

- :func:`highest_k_metrics` picks the entries of one metric family (``pass@{k}`` …) at the largest k;
- :func:`select_key_metrics` builds a headline from fixed keys and families at their highest k;
- :func:`default_key_metrics` is every ``mean/*`` entry (the default of resources servers).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rewardgym.metrics.pass_at_k import STAT_SUFFIXES

HighestK = tuple[str, tuple[str, ...] | None, tuple[str, ...]]
"""A key-metric family: (``"pass@{k}"``-style pattern, score names or None for all, names to exclude)."""


def highest_k_metrics(
    metrics: Mapping[str, Any],
    family: str,
    *,
    score_names: Iterable[str] | None = None,
    exclude_names: Iterable[str] = (),
) -> dict[str, Any]:
    """Entries of ``family`` (``"pass@{k}"``, ``"pass@1[avg-of-{k}]"``, ``"majority@{k}"``) at the largest k.

    The ``…/std_dev_across_runs`` / ``…/std_err_across_runs`` entries are skipped; ``score_names`` keeps only
    those scores, ``exclude_names`` drops some.
    """
    head, _, tail = family.partition("{k}")
    pattern = re.compile(re.escape(head) + r"(\d+)" + re.escape(tail) + r"/(.+)")
    wanted = set(score_names) if score_names is not None else None
    excluded = set(exclude_names)
    by_k: dict[int, dict[str, Any]] = {}
    for key, value in metrics.items():
        match = pattern.fullmatch(key)
        if match is None or key.endswith(STAT_SUFFIXES):
            continue
        name = match.group(2)
        if (wanted is None or name in wanted) and name not in excluded:
            by_k.setdefault(int(match.group(1)), {})[key] = value
    return by_k[max(by_k)] if by_k else {}


def select_key_metrics(
    agent_metrics: Mapping[str, Any],
    first: Sequence[str],
    highest_k: Sequence[HighestK],
    last: Sequence[str] = (),
) -> dict[str, Any]:
    """Headline metrics: the ``first`` keys, each family at its highest k, then the ``last`` keys."""
    picked = {key: agent_metrics[key] for key in first if key in agent_metrics}
    for family, names, excluded in highest_k:
        picked.update(highest_k_metrics(agent_metrics, family, score_names=names, exclude_names=excluded))
    picked.update({key: agent_metrics[key] for key in last if key in agent_metrics})
    return picked


def default_key_metrics(agent_metrics: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in agent_metrics.items() if key.startswith("mean/")}
