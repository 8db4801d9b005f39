"""The curriculum's policies by name: importing this module loads every built-in policy (each registers
itself with :func:`rewardgym.curriculum.policy.register`), so the registry's module never imports its
members back."""

from __future__ import annotations

import rewardgym.curriculum.expected_signal
import rewardgym.curriculum.policies
import rewardgym.curriculum.policies_baselines  # noqa: F401  (they register their policies)
from rewardgym.curriculum.policy import POLICIES, Policy
from rewardgym.errors import UsageError


def policy_class(name: str) -> type[Policy]:
    """The policy registered under ``name``; an unknown name is one line listing the known ones."""
    found = POLICIES.get(name)
    if found is None:
        raise UsageError(f"unknown curriculum policy {name!r} (known: {', '.join(sorted(POLICIES))})")
    return found
