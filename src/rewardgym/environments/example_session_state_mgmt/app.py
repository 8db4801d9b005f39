"""HTTP server of ``example_session_state_mgmt``: a counter kept in each session's state.

Contract (registered as resources server ``example_session_state_mgmt``):

- Config: :class:`ExampleSessionStateMgmtServerConfig` = the resources-server fields (unknown keys are
  errors; ``session_ttl_s``/``max_sessions`` bound the kept counters) plus
  :class:`~.verifier.ExampleSessionStateMgmtConfig` (no fields).
- ``POST /seed_session`` (the row; ``initial_count`` required → HTTP 422 naming it) →
  :func:`.tools.seed_session` on the request's session state; answers ``{}``.
- ``POST /increment_counter {"count": int}`` and ``POST /get_counter_value`` (body ignored) →
  :mod:`.tools` on the caller's session state (the session cookie names the episode).
- ``POST /verify`` → :func:`.verifier.verify` with the state of the request's session, or ``None`` when the
  server does not know it (reward 0.0); ``expected_count`` is required (HTTP 422 naming it).
- ``GET /reverify_mode`` → ``"unsupported"``: the reward is server state a replay cannot see.
- Metrics: the statistics baseline plus ``pass@k`` / ``pass@1[avg-of-k]`` of the reward as ``accuracy``; key
  metrics are every ``mean/*`` entry and those two families at the largest k.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewardgym.env import (
    ResourcesServer,
    ResourcesServerConfig,
    Session,
    default_key_metrics,
    environment,
    highest_k_metrics,
    pass_majority_metrics,
    tool,
)
from rewardgym.environments.example_session_state_mgmt import tools
from rewardgym.environments.example_session_state_mgmt.tools import (
    ExampleSessionStateMgmtSeedSessionRequest,
    GetCounterValueArgs,
    GetCounterValueResult,
    IncrementCounterArgs,
    IncrementCounterResult,
)
from rewardgym.environments.example_session_state_mgmt.verifier import (
    ExampleSessionStateMgmtConfig,
    ExampleSessionStateMgmtVerifyRequest,
    ExampleSessionStateMgmtVerifyResponse,
    verify,
)


class ExampleSessionStateMgmtServerConfig(ResourcesServerConfig, ExampleSessionStateMgmtConfig):
    """The ``resources_servers.example_session_state_mgmt`` YAML block: server fields only."""


@environment("example_session_state_mgmt")
class ExampleSessionStateMgmtServer(ResourcesServer[ExampleSessionStateMgmtServerConfig]):
    """``example_session_state_mgmt`` over HTTP (see the module docstring)."""

    reverify_mode = ExampleSessionStateMgmtConfig.REVERIFY_MODE

    async def seed_session(self, body: ExampleSessionStateMgmtSeedSessionRequest) -> None:
        session = self.current_session()
        assert session is not None, "seed_session always runs inside a request"
        tools.seed_session(body, session.state)

    @tool(description="")
    async def increment_counter(self, args: IncrementCounterArgs, session: Session) -> IncrementCounterResult:
        return tools.increment_counter(args, session.state)

    @tool(description="")
    async def get_counter_value(self, args: GetCounterValueArgs, session: Session) -> GetCounterValueResult:
        return tools.get_counter_value(args, session.state)

    async def verify(
        self, body: ExampleSessionStateMgmtVerifyRequest
    ) -> ExampleSessionStateMgmtVerifyResponse:
        session = self.current_session(create=False)
        return verify(body, self.config, session.state if session is not None else None)

    def compute_metrics(self, tasks: list[list[dict[str, Any]]]) -> Mapping[str, Any]:
        return pass_majority_metrics(tasks)[0]

    def get_key_metrics(self, agent_metrics: Mapping[str, Any]) -> Mapping[str, Any]:
        return {
            **default_key_metrics(agent_metrics),
            **highest_k_metrics(agent_metrics, "pass@{k}"),
            **highest_k_metrics(agent_metrics, "pass@1[avg-of-{k}]"),
        }
