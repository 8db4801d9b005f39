r"""The ``\boxed{…}`` scan the built-in environments share (``mcqa``, ``string_match``): pure, no I/O.

Contract: a box is the text after a ``\boxed{`` marker up to the ``}`` that balances it (brace counting);
an unbalanced box has no contents. :func:`last_box` reads the last marker only (``mcqa``'s rule: an
unbalanced last box means no answer); :func:`last_balanced_box` tries the markers from the last one back
and takes the first that balances (``string_match``'s rule). :func:`unwrap_text` peels whole-string
``\text{…}`` wrappers. None of them raises on any text.
"""

from __future__ import annotations

import re

BOXED_MARKER = "\\boxed{"
_TEXT_WRAP = re.compile(r"\\text\{\s*(.*?)\s*\}", re.DOTALL)


def box_contents(text: str, begin: int) -> str | None:
    """The text from ``begin`` (just after a marker) to its balancing ``}``; ``None`` when it never closes."""
    depth = 1
    for index in range(begin, len(text)):
        char = text[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[begin:index]
    return None


def last_box(text: str) -> str | None:
    r"""The contents of the last ``\boxed{``; ``None`` when there is none or it is unbalanced."""
    start = text.rfind(BOXED_MARKER)
    return None if start < 0 else box_contents(text, start + len(BOXED_MARKER))


def last_balanced_box(text: str) -> str | None:
    r"""The contents of the last ``\boxed{`` that balances (else the one before, …)."""
    end = len(text)
    while (start := text.rfind(BOXED_MARKER, 0, end)) >= 0:
        inner = box_contents(text, start + len(BOXED_MARKER))
        if inner is not None:
            return inner
        end = start
    return None


def unwrap_text(text: str) -> str:
    r"""Repeatedly unwrap a whole-string ``\text{...}`` wrapper."""
    while (match := _TEXT_WRAP.fullmatch(text)) is not None:
        text = match.group(1)
    return text
