"""Splitting command-line leftovers into config overrides and mistakes."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

from rewardgym.errors import UsageError


def split_overrides(extra: Sequence[str], known_options: Iterable[str]) -> list[str]:
    """Return the ``+k=v`` / ``++k=v`` tokens of ``extra``; any other token is a usage error.

    The error names the token and, when one is close, the option the user probably meant.
    """
    overrides: list[str] = []
    options = sorted(set(known_options))
    for token in extra:
        if token.startswith("+"):
            overrides.append(token)
            continue
        flag = token.split("=", 1)[0]
        hint = difflib.get_close_matches(flag, options, n=1, cutoff=0.6)
        message = f"unknown argument {token!r}"
        if hint:
            message += f" (did you mean {hint[0]!r}?)"
        elif not token.startswith("-"):
            message += " (config overrides are written +key=value or ++key=value)"
        raise UsageError(message)
    return overrides
