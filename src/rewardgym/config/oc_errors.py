"""Readable one-line messages from OmegaConf exceptions (without their debugging footer lines)."""

from __future__ import annotations


def omegaconf_message(exc: BaseException) -> str:
    """The first line of an OmegaConf error's message, without OmegaConf's debugging footer."""
    msg = getattr(exc, "msg", None)
    text = msg if isinstance(msg, str) and msg else str(exc)
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0].strip() if lines else type(exc).__name__
