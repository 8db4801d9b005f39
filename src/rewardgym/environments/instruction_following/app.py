"""HTTP server of ``instruction_following``: ``/verify`` checks the instructions (:func:`.verifier.verify`).

Contract (registered as resources server ``instruction_following``):

- Config: :class:`InstructionFollowingServerConfig` = the resources-server fields (unknown keys are errors)
  plus :class:`~.verifier.InstructionFollowingConfig` (no fields).
- ``POST /verify``: body :class:`~.verifier.InstructionFollowingVerifyRequest` (``id`` and the instructions
  are required; legacy top-level ``instruction_id_list``/``prompt``/``kwargs``/``grading_mode`` are moved
  into ``verifier_metadata``; a missing one is HTTP 422 naming ``verifier_metadata.<key>``); the answer
  holds exactly ``responses_create_params, response, reward, follow_all_instructions,
  follow_instruction_list, verifier_metadata``.
- No tools; ``seed_session`` is the default no-op.
- ``GET /reverify_mode`` → ``"stateless"``: verify is a pure function of the row and the response (language
  detection is seeded), so replaying it without the session is exact (NeMo Gym declares ``unknown``).
- Metrics: the default statistics baseline (NeMo Gym declares no environment metrics).
"""

from __future__ import annotations

from pydantic import ConfigDict

from rewardgym.env import ResourcesServer, ResourcesServerConfig, ReverifyMode, environment
from rewardgym.environments.instruction_following.verifier import (
    InstructionFollowingConfig,
    InstructionFollowingVerifyRequest,
    InstructionFollowingVerifyResponse,
    verify,
)


class InstructionFollowingServerConfig(ResourcesServerConfig, InstructionFollowingConfig):
    """The ``resources_servers.instruction_following`` YAML block: server fields only."""

    model_config = ConfigDict(extra="forbid")


@environment("instruction_following")
class InstructionFollowingServer(ResourcesServer[InstructionFollowingServerConfig]):
    """``instruction_following`` over HTTP (see the module docstring)."""

    reverify_mode = ReverifyMode.STATELESS

    async def verify(self, body: InstructionFollowingVerifyRequest) -> InstructionFollowingVerifyResponse:
        return verify(body, self.config)
