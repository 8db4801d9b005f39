"""``example_tool_call_multireward``: one ``get_weather`` call, scored by three {0, 1} components.

``correctness`` (the expected call was made), ``schema_valid`` (the first call's arguments are a JSON object
with the tool's required keys) and ``format`` (exactly one call and no message at all); the reward is their
sum (0..3). A reference pattern for multi-objective rewards. Pure logic lives in :mod:`.verifier` and
:mod:`.tools`; :mod:`.app` serves them (imported here so that the registry finds
``resources_servers/example_tool_call_multireward``).
"""

from rewardgym.environments.example_tool_call_multireward.app import ExampleToolCallMultirewardServer

__all__ = ["ExampleToolCallMultirewardServer"]
