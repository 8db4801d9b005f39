"""HTTP server of ``equivalence_rule``: ``/verify`` scores the answer text with :func:`.verifier.verify`.

Contract (registered as resources server ``equivalence_rule``):

- Config: :class:`EquivalenceRuleServerConfig` = the resources-server fields (unknown keys are errors) plus
  :class:`~.verifier.EquivalenceRuleConfig` (``grading_rule``). Both declare ``name``: the server's meaning
  wins (the instance name, required; the launcher sets it), NeMo Gym's default ``equivalence_rule`` is
  only the instance name its own config uses.
- ``POST /verify``: body :class:`~.verifier.EquivalenceRuleVerifyRequest` (``expected_answer`` required,
  every other row field kept); the answer is ``responses_create_params, response, reward,
  equivalence_score, expected_answer`` plus every extra row field (NeMo Gym's ``extra="allow"``).
- No tools; ``seed_session`` is the default no-op.
- ``GET /reverify_mode`` → ``"stateless"``: verify is a pure function of the row, the response and the
  config, so replaying it without the session is exact (NeMo Gym declares ``unknown``).
- Metrics: the default statistics baseline (NeMo Gym declares no environment metrics).
- Configs: ``configs/lc.yaml`` (NeMo Gym's instance names ``lc_equivalence_rule`` and
  ``lc_equivalence_rule_simple_agent``, which the rows' ``agent_ref`` names) and
  ``configs/equivalence_rule.yaml`` (includes ``lc.yaml``) so that ``--resources-server equivalence_rule``
  finds it.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from rewardgym.env import ResourcesServer, ResourcesServerConfig, ReverifyMode, environment
from rewardgym.environments.equivalence_rule.verifier import (
    EquivalenceRuleConfig,
    EquivalenceRuleVerifyRequest,
    EquivalenceRuleVerifyResponse,
    verify,
)


class EquivalenceRuleServerConfig(ResourcesServerConfig, EquivalenceRuleConfig):
    """The ``resources_servers.equivalence_rule`` YAML block: server fields plus ``grading_rule``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    """Instance name (the top-level YAML key); it names logs, the session cookie and error bodies."""


@environment("equivalence_rule")
class EquivalenceRuleServer(ResourcesServer[EquivalenceRuleServerConfig]):
    """``equivalence_rule`` over HTTP (see the module docstring)."""

    reverify_mode = ReverifyMode.STATELESS

    async def verify(self, body: EquivalenceRuleVerifyRequest) -> EquivalenceRuleVerifyResponse:
        return verify(body, self.config)
