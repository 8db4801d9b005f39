"""The instruction registry: instruction id -> (argument model, check function).

Contract:
- Every instruction family is one plain function ``check(text, args) -> bool`` plus a pydantic model of
  its keyword arguments (the row's ``kwargs`` entry). Registering uses :func:`instruction`.
- Argument models forbid unknown keys and do not coerce types, mirroring the reference checkers, whose
  ``build_description(**kwargs)`` raises on an unexpected keyword. A row whose kwargs do not validate, an
  unknown instruction id, or a check that raises: the instruction counts as not followed
  (:func:`evaluate`), as in NeMo Gym where any exception in a check counts as ``False``.
- Where the reference checker would draw a *random* value for a missing argument, the argument is
  required here, so the instruction counts as not followed (deterministic; documented in the README).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, ValidationError

Relation = Literal["less than", "at least"]
"""The two comparisons of IFEval: ``less than`` is ``<``, ``at least`` is ``>=``."""

Number = StrictInt | StrictFloat
"""A threshold or count as written in the row (ints, or floats from tabular exports)."""

Word = Annotated[StrictStr, Field(min_length=1)]
"""A keyword, word or phrase; the reference draws a random one when it is empty, so empty fails here."""


class Args(BaseModel):
    """Base of every argument model: unknown keys are an error, values are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class NoArgs(Args):
    """An instruction that takes no arguments."""


def compare(actual: float, relation: str, threshold: float) -> bool:
    """``actual < threshold`` for ``less than``, ``actual >= threshold`` otherwise (``at least``)."""
    if relation == "less than":
        return actual < threshold
    return actual >= threshold


@dataclass(frozen=True)
class Instruction:
    """One registered instruction family."""

    instruction_id: str
    args_model: type[Args]
    check: Callable[[str, Any], bool]


A = TypeVar("A", bound=Args)

REGISTRY: dict[str, Instruction] = {}
"""Every supported instruction id (filled by the ``checks_*`` modules on import)."""


def instruction(
    instruction_id: str, args_model: type[A]
) -> Callable[[Callable[[str, A], bool]], Callable[[str, A], bool]]:
    """Register ``check`` under ``instruction_id`` with its argument model."""

    def register(check: Callable[[str, A], bool]) -> Callable[[str, A], bool]:
        if instruction_id in REGISTRY:
            raise RuntimeError(f"instruction {instruction_id!r} registered twice")
        REGISTRY[instruction_id] = Instruction(instruction_id, args_model, check)
        return check

    return register


def evaluate(instruction_id: str, kwargs: dict[str, Any] | None, text: str) -> bool:
    """Whether ``text`` follows one instruction. ``None`` kwargs and ``None`` values mean "not given"."""
    entry = REGISTRY.get(instruction_id)
    if entry is None:
        return False
    given = {key: value for key, value in (kwargs or {}).items() if value is not None}
    try:
        args = entry.args_model.model_validate(given)
    except ValidationError:
        return False
    try:
        return bool(entry.check(text, args))
    except Exception:  # a failing check counts as not followed, like the reference
        return False
