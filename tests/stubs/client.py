"""The test HTTP client now lives in :mod:`rewardgym.testing.client` (re-exported here for the tests)."""

from rewardgym.testing.client import Reply, call

__all__ = ["Reply", "call"]
