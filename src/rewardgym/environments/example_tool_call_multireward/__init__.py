"""``example_tool_call_multireward``: one ``get_weather`` call, scored by three {0, 1} components.

``correctness`` (the expected call was made), ``schema_valid`` (the first call's arguments are a JSON object
with the tool's required keys) and ``format`` (exactly one call and no message at all); the reward is their
sum (0..3). A reference pattern for multi-objective rewards. Pure logic lives in :mod:`.verifier` and
:mod:`.tools`; the HTTP server class is added on top of them.
"""
