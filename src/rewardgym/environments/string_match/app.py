"""HTTP server of ``string_match``: ``/verify`` extracts and grades the answer (:func:`.verifier.verify`).

Contract (registered as resources server ``string_match``):

- Config: :class:`StringMatchServerConfig` = the resources-server fields (unknown keys are errors) plus
  :class:`~.verifier.StringMatchConfig` (no fields).
- ``POST /verify``: body :class:`~.verifier.StringMatchVerifyRequest` (``expected_answer`` required; an
  unknown ``extraction_mode`` is HTTP 422 naming it); the answer holds exactly ``responses_create_params,
  response, reward, expected_answer, extracted_answer`` (null when nothing was extracted, e.g. no
  assistant message).
- No tools; ``seed_session`` is the default no-op.
- ``GET /reverify_mode`` → ``"stateless"``: verify is a pure function of the row and the response, so
  replaying it without the session is exact (NeMo Gym declares ``unknown``).
- Metrics: the default statistics baseline (NeMo Gym declares no environment metrics).
"""

from __future__ import annotations

from pydantic import ConfigDict

from rewardgym.env import ResourcesServer, ResourcesServerConfig, ReverifyMode, environment
from rewardgym.environments.string_match.verifier import (
    StringMatchConfig,
    StringMatchVerifyRequest,
    StringMatchVerifyResponse,
    verify,
)


class StringMatchServerConfig(ResourcesServerConfig, StringMatchConfig):
    """The ``resources_servers.string_match`` YAML block: server fields only."""

    model_config = ConfigDict(extra="forbid")


@environment("string_match")
class StringMatchServer(ResourcesServer[StringMatchServerConfig]):
    """``string_match`` over HTTP (see the module docstring)."""

    reverify_mode = ReverifyMode.STATELESS

    async def verify(self, body: StringMatchVerifyRequest) -> StringMatchVerifyResponse:
        return verify(body, self.config)
