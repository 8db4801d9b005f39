"""rewardgym: measure how often an LLM policy succeeds on each task of a verifiable environment.

The public facade. Internals live in sub-packages, one per concept (``stats``, ``protocol``, ``config``,
``io``, ``servers``, ``models``, ``agents``, ``environments``, ``collect``, ``profile``, ``cli``); data flows
one way:
config → servers; rows → collector → rollouts → profiler → reports.

``__version__`` is looked up in the installed package metadata on first access only (``importlib.metadata``
costs tens of milliseconds, which every server process would otherwise pay at start-up).
"""

from __future__ import annotations

from typing import Any

from rewardgym.errors import ConfigError, DataError, RewardGymError, ServerError, UsageError

__all__ = ["ConfigError", "DataError", "RewardGymError", "ServerError", "UsageError", "__version__"]

__version__: str


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rewardgym")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        return "0.0.0"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value = _installed_version()
        globals()["__version__"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
