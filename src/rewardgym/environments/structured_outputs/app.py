"""HTTP server of ``structured_outputs``: ``/verify`` checks the answer against the schema (:mod:`.verifier`).

Contract (registered as resources server ``structured_outputs``):

- Config: :class:`StructuredOutputsServerConfig` = the resources-server fields (unknown keys are errors) plus
  :class:`~.verifier.StructuredOutputsConfig` (``xml_coerce_types``).
- ``POST /verify``: body :class:`~.verifier.StructuredOutputsVerifyRequest` (``schema_str`` required → HTTP
  422 naming it); the answer holds ``responses_create_params, response, reward, schema_str, schema_type,
  error_type, error_message`` and every descriptive row field (null when the row lacks it). A failed answer
  is reward 0.0 with ``error_type`` naming the failing step (``empty_response``, ``parse_error``,
  ``missing_tool_call``, ``validation_error``, ...), never an HTTP error.
- No tools: a tool-call row's function call is the answer, not something to execute; under ``simple_agent``
  it is POSTed here and gets HTTP 404, whose body goes back to the model (see the README).
  ``seed_session`` is the default no-op.
- ``GET /reverify_mode`` → ``"stateless"``: verify is a pure function of the row, the response and the
  config, so replaying it without the session is exact (NeMo Gym declares ``unknown``).
- Metrics: the default statistics baseline (NeMo Gym declares no environment metrics).
"""

from __future__ import annotations

from pydantic import ConfigDict

from rewardgym.env import ResourcesServer, ResourcesServerConfig, ReverifyMode, environment
from rewardgym.environments.structured_outputs.verifier import (
    StructuredOutputsConfig,
    StructuredOutputsVerifyRequest,
    StructuredOutputsVerifyResponse,
    verify,
)


class StructuredOutputsServerConfig(ResourcesServerConfig, StructuredOutputsConfig):
    """The ``resources_servers.structured_outputs`` YAML block: server fields plus ``xml_coerce_types``."""

    model_config = ConfigDict(extra="forbid")


@environment("structured_outputs")
class StructuredOutputsServer(ResourcesServer[StructuredOutputsServerConfig]):
    """``structured_outputs`` over HTTP (see the module docstring)."""

    reverify_mode = ReverifyMode.STATELESS

    async def verify(self, body: StructuredOutputsVerifyRequest) -> StructuredOutputsVerifyResponse:
        return verify(body, self.config)
