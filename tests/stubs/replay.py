"""Replay helpers for the repository's tests: the public test kit (:mod:`rewardgym.testing`) under the names
the tests use."""

from rewardgym.testing import model_turns, serve_agent
from rewardgym.testing import verify_keys as stamps_removed
from rewardgym.testing.items import function_call, message, response

__all__ = ["function_call", "message", "model_turns", "response", "serve_agent", "stamps_removed"]
