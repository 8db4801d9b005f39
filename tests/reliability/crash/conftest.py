"""The collection tests' stub agent fixture, for the crash tests that drive ``run_collection`` in-process."""

from tests.collect.conftest import agent

__all__ = ["agent"]
