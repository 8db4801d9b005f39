"""HTTP server of ``xlam_fc``: ``/verify`` compares the model's function calls with the expected ones.

Contract (registered as resources server ``xlam_fc``):

- Config: :class:`XlamFcServerConfig` = the resources-server fields (unknown keys are errors) plus
  :class:`~.verifier.XlamFcConfig` (no fields).
- ``POST /verify``: body :class:`~.verifier.XlamFcVerifyRequest` (``expected_answers`` defaults to ``[]``;
  an entry without ``name`` is HTTP 422 naming it); the answer holds exactly ``responses_create_params,
  response, reward, num_expected, num_predicted, num_correct, predicted_calls``.
- No tools, as in NeMo Gym: the rows offer tools the model is meant to *call*, not to run. Under
  ``simple_agent`` each call is POSTed to ``/<name>``, gets HTTP 404 and that body goes back to the model.
  ``seed_session`` is the default no-op.
- ``GET /reverify_mode`` → ``"stateless"``: verify is a pure function of the row and the response, so
  replaying it without the session is exact (NeMo Gym declares ``unknown``).
- Metrics: the default statistics baseline (NeMo Gym declares no environment metrics).
"""

from __future__ import annotations

from pydantic import ConfigDict

from rewardgym.env import ResourcesServer, ResourcesServerConfig, ReverifyMode, environment
from rewardgym.environments.xlam_fc.verifier import (
    XlamFcConfig,
    XlamFcVerifyRequest,
    XlamFcVerifyResponse,
    verify,
)


class XlamFcServerConfig(ResourcesServerConfig, XlamFcConfig):
    """The ``resources_servers.xlam_fc`` YAML block: server fields only."""

    model_config = ConfigDict(extra="forbid")


@environment("xlam_fc")
class XlamFcServer(ResourcesServer[XlamFcServerConfig]):
    """``xlam_fc`` over HTTP (see the module docstring)."""

    reverify_mode = ReverifyMode.STATELESS

    async def verify(self, body: XlamFcVerifyRequest) -> XlamFcVerifyResponse:
        return verify(body, self.config)
