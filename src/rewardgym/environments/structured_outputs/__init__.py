"""``structured_outputs``: does the answer parse and validate against the row's JSON Schema?

The answer is either the message text in JSON/YAML/XML/TOML/CSV (``response_mode: text``) or the
arguments of one function call (``response_mode: tool_call``). :mod:`.verifier` strictifies the schema
(every property required, no extras) and validates with the OpenAPI 3.1 validator; only adherence to
the schema is measured, not whether the content is right. :mod:`.app` serves it (imported here so that
the registry finds ``resources_servers/structured_outputs``).
"""

from rewardgym.environments.structured_outputs.app import StructuredOutputsServer

__all__ = ["StructuredOutputsServer"]
