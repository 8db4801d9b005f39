"""A ``scripted.function`` for the tests: answers with the length of the last user text."""

from __future__ import annotations

from typing import Any


def by_length(request: dict[str, Any]) -> str:
    text = request["input"] if isinstance(request["input"], str) else request["input"][-1]["content"]
    return f"Answer: {len(text)}"


NOT_CALLABLE = 3
