"""Summing the token usage of the model calls of one episode (docs/reference/environments.md §1.3).

``accumulate_usage(total, new)`` on Responses-API usage dicts:
- ``new`` null → ``total`` unchanged; ``total`` null → a copy of ``new``;
- otherwise ``input_tokens``, ``output_tokens`` and ``total_tokens`` are added;
- ``input_tokens_details.cached_tokens`` and ``output_tokens_details.reasoning_tokens`` are added only when
  both sides know them; when either side does not, the result does not either (null: unknown stays unknown).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_COUNTS = ("input_tokens", "output_tokens", "total_tokens")
_DETAILS = (("input_tokens_details", "cached_tokens"), ("output_tokens_details", "reasoning_tokens"))


def _copy(value: Any) -> Any:
    """Deep copy of JSON-shaped data (dicts and lists are copied, leaves shared): ~3x cheaper than
    ``copy.deepcopy``, which matters once per model call."""
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def _add_details(a: Any, b: Any, key: str) -> dict[str, Any] | None:
    if not isinstance(a, Mapping) or not isinstance(b, Mapping):
        return None
    left, right = a.get(key), b.get(key)
    merged = {**a, **b}
    merged[key] = left + right if left is not None and right is not None else None
    return merged


def accumulate_usage(total: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``total + new`` by the rules of the module docstring (inputs are not modified)."""
    if new is None:
        return dict(total) if total is not None else None
    if total is None:
        copied: dict[str, Any] = _copy(new)
        return copied
    out = {**total, **new}
    for key in _COUNTS:
        out[key] = (total.get(key) or 0) + (new.get(key) or 0)
    for details, key in _DETAILS:
        if details not in total and details not in new:
            continue
        out[details] = _add_details(total.get(details), new.get(details), key)
    return out
