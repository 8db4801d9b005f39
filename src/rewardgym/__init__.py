"""rewardgym: measure how often an LLM policy succeeds on each task of a verifiable environment.

The public facade. Internals live in sub-packages, one per concept (``protocol``, ``config``, ``io``,
``servers``, ``models``, ``agents``, ``environments``, ``collect``, ``profile``, ``cli``); data flows one way:
config → servers; rows → collector → rollouts → profiler → reports.
"""

from importlib.metadata import PackageNotFoundError, version

from rewardgym.errors import ConfigError, DataError, RewardGymError, ServerError, UsageError

try:
    __version__ = version("rewardgym")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["ConfigError", "DataError", "RewardGymError", "ServerError", "UsageError", "__version__"]
