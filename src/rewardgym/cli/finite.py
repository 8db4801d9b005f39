"""Every float flag of every command is a finite number: ``nan``, ``inf`` and ``-inf`` are refused.

Python's ``float()`` — and so every ``float`` option — accepts ``nan`` and ``inf``; no flag of ``gym``
means anything with them (a NaN threshold compares false with every reward, a NaN level passes a range
check written as ``not low < x < high`` one way and fails it the other). Rather than a check per
command, :func:`require_finite_floats` wraps the value processing of every parameter of a command tree
once, at start-up: a parsed value that is (or holds) a non-finite float is a usage error naming the flag
(``Invalid value for '--level': must be a finite number, got nan``, exit 2). Parsing is otherwise
untouched.
"""

from __future__ import annotations

import math
from typing import Any

from typer._click.exceptions import BadParameter


def _non_finite(value: Any) -> float | None:
    items = value if isinstance(value, list | tuple) else (value,)
    for item in items:
        if isinstance(item, float) and not math.isfinite(item):
            return item
    return None


def _checked(param: Any) -> None:
    original = param.process_value

    def process_value(ctx: Any, value: Any) -> Any:
        value = original(ctx, value)
        bad = _non_finite(value)
        if bad is not None:
            raise BadParameter(f"must be a finite number, got {bad}", ctx=ctx, param=param)
        return value

    param.process_value = process_value


def require_finite_floats(command: Any) -> None:
    """Refuse non-finite float values on ``command`` (a click command or group) and its subcommands."""
    for param in getattr(command, "params", []):
        _checked(param)
    for sub in getattr(command, "commands", {}).values():
        require_finite_floats(sub)
