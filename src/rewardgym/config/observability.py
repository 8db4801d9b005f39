"""``observability_enabled`` and ``model_call_capture_dir``: NeMo Gym 0.7.0's trajectory-capture switch.

Contract: :func:`capture_dir` reads both keys of a resolved config and returns the capture directory when
capture is on, else None. As in 0.7.0, the directory is required and absolute when capture is on; a value
that is not a boolean, or a missing or relative directory, is a one-line :class:`ConfigError` naming the key.
The servers get both keys as run-wide defaults (:mod:`rewardgym.launch.from_config`) and check them again in
their own config (:class:`rewardgym.servers.config.ServerConfig`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from rewardgym.errors import ConfigError


class SupportsGet(Protocol):
    """A resolved config (:class:`~rewardgym.config.GymConfig`) or a plain mapping."""

    def get(self, key: str, default: Any = None, /) -> Any: ...


def capture_dir(cfg: SupportsGet) -> Path | None:
    """The capture directory of ``cfg`` (module doc)."""
    enabled = cfg.get("observability_enabled", False)
    if enabled is None:
        enabled = False
    if not isinstance(enabled, bool):
        raise ConfigError(f"observability_enabled: must be true or false, got {enabled!r}")
    if not enabled:
        return None
    value = cfg.get("model_call_capture_dir")
    if value in (None, ""):
        raise ConfigError(
            "model_call_capture_dir: required (an absolute directory) when observability_enabled is true"
        )
    path = Path(str(value)).expanduser()
    if not path.is_absolute():
        raise ConfigError(
            "model_call_capture_dir: must be an absolute directory when observability_enabled is true, "
            f"got {str(value)!r}"
        )
    return path
