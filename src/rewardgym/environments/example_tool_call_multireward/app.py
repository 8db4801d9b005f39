"""HTTP server of ``example_tool_call_multireward``: ``get_weather`` and a three-component verify.

Contract (registered as resources server ``example_tool_call_multireward``):

- Config: :class:`ExampleToolCallMultirewardServerConfig` = the resources-server fields (unknown keys are
  errors) plus :class:`~.verifier.ExampleToolCallMultirewardConfig` (no fields).
- ``POST /get_weather {"city": str}`` → :func:`.tools.get_weather` (stateless, "sunny"); its declaration
  equals the rows' tool entry (``strict`` aside).
- ``POST /verify`` → :func:`.verifier.verify`: ``reward = correctness + schema_valid + format``, with
  ``reward_components``, the three components as top-level fields, and ``predicted_calls``.
- ``GET /reverify_mode`` → ``"stateless"`` (verify reads only the row and the response; NeMo Gym:
  ``unknown``).
- Metrics: the statistics baseline plus ``pass@k`` / ``pass@1[avg-of-k]`` of each component (a missing
  component counts 0); key metrics are every ``mean/*`` entry and those two families at the largest k.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewardgym.env import (
    ResourcesServer,
    ResourcesServerConfig,
    default_key_metrics,
    environment,
    highest_k_metrics,
    pass_majority_metrics,
    tool,
)
from rewardgym.environments.example_tool_call_multireward import tools
from rewardgym.environments.example_tool_call_multireward.tools import GetWeatherArgs, GetWeatherResult
from rewardgym.environments.example_tool_call_multireward.verifier import (
    ExampleToolCallMultirewardConfig,
    ExampleToolCallMultirewardVerifyRequest,
    ExampleToolCallMultirewardVerifyResponse,
    verify,
)

COMPONENTS = ("correctness", "schema_valid", "format")
"""The reward components, each a {0, 1} top-level field of the verify response."""


def component_scores(row: Mapping[str, Any]) -> dict[str, float]:
    """The components of one verify response as pass@k scores (0.0 when a component is missing)."""
    values = {name: row.get(name) for name in COMPONENTS}
    return {name: float(v) if isinstance(v, int | float) else 0.0 for name, v in values.items()}


class ExampleToolCallMultirewardServerConfig(ResourcesServerConfig, ExampleToolCallMultirewardConfig):
    """The ``resources_servers.example_tool_call_multireward`` YAML block: server fields only."""


@environment("example_tool_call_multireward")
class ExampleToolCallMultirewardServer(ResourcesServer[ExampleToolCallMultirewardServerConfig]):
    """``example_tool_call_multireward`` over HTTP (see the module docstring)."""

    reverify_mode = ExampleToolCallMultirewardConfig.REVERIFY_MODE

    @tool(description="Get the current weather for a city.")
    async def get_weather(self, args: GetWeatherArgs) -> GetWeatherResult:
        return tools.get_weather(args, {})

    async def verify(
        self, body: ExampleToolCallMultirewardVerifyRequest
    ) -> ExampleToolCallMultirewardVerifyResponse:
        return verify(body, self.config)

    def compute_metrics(self, tasks: list[list[dict[str, Any]]]) -> Mapping[str, Any]:
        return pass_majority_metrics(tasks, score_fn=component_scores)[0]

    def get_key_metrics(self, agent_metrics: Mapping[str, Any]) -> Mapping[str, Any]:
        return {
            **default_key_metrics(agent_metrics),
            **highest_k_metrics(agent_metrics, "pass@{k}"),
            **highest_k_metrics(agent_metrics, "pass@1[avg-of-{k}]"),
        }
