"""The reward range a run's environments declare, recorded in ``<stem>_run.json`` for the health checks."""

from __future__ import annotations

from typing import Any

from rewardgym.config import GymConfig


def declared_reward_range(cfg: GymConfig) -> list[float] | None:
    """``[low, high]`` the run's resources servers declare (``reward_range`` of their config: the YAML's,
    else their config class's default; the union when several differ) — recorded in ``<stem>_run.json``
    so ``gym eval health-check`` / ``analyze`` judge rewards by it. None when all declare [0, 1], or when an
    implementation cannot be loaded here (the server itself then validates its config at startup)."""
    from rewardgym.registry import lookup

    lows: list[float] = []
    highs: list[float] = []
    for instance in cfg.instances_of("resources_servers"):
        try:
            field = lookup("resources_servers", instance.implementation).config_class.model_fields.get(
                "reward_range"
            )
            value: Any = instance.fields.get("reward_range", None if field is None else field.default)
            low, high = (float(v) for v in value)
        except Exception:  # not loadable here, or not a pair: nothing declared by this one
            continue
        if low <= high:
            lows.append(low)
            highs.append(high)
    if not lows or (min(lows), max(highs)) == (0.0, 1.0):
        return None
    return [min(lows), max(highs)]
