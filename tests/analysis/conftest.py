"""Fixtures of the analysis tests: the collection tests' real stub agent over HTTP."""

from tests.collect.conftest import agent

__all__ = ["agent"]
