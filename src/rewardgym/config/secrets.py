"""The one redaction function every printer and logger uses (placeholder until the config layer lands)."""

from __future__ import annotations


def redact_text(text: str) -> str:
    return text
