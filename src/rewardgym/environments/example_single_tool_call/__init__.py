"""``example_single_tool_call``: a minimal tool-calling demo (a ``get_weather`` tool; every episode scores 1).

It measures nothing about quality: it exercises the tool-call plumbing (agent loop, tool endpoint, verify).
Pure logic lives in :mod:`.verifier` and :mod:`.tools`; :mod:`.app` serves them (imported here so that the
registry finds ``resources_servers/example_single_tool_call``).
"""

from rewardgym.environments.example_single_tool_call.app import ExampleSingleToolCallServer

__all__ = ["ExampleSingleToolCallServer"]
