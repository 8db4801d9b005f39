"""HTTP server of ``example_single_tool_call``: the ``get_weather`` tool and a verify that always scores 1.0.

Contract (registered as resources server ``example_single_tool_call``):

- Config: :class:`ExampleSingleToolCallServerConfig` = the resources-server fields (unknown keys are errors)
  plus :class:`~.verifier.ExampleSingleToolCallConfig` (no fields).
- ``POST /get_weather {"city": str}`` → :func:`.tools.get_weather` (stateless; no ``city`` → HTTP 422).
  Its declaration (``function_tools()``) equals the rows' tool entry (empty description, ``strict`` aside).
- ``POST /verify`` → :func:`.verifier.verify` (reward 1.0; keys ``responses_create_params, response,
  reward``).
- ``GET /reverify_mode`` → ``"stateless"``: verify reads nothing but the row (NeMo Gym says ``unknown``).
- Metrics: the default statistics baseline (the reward is constant, pass@k would say nothing).
"""

from __future__ import annotations

from rewardgym.env import ResourcesServer, ResourcesServerConfig, environment, tool
from rewardgym.environments.example_single_tool_call import tools
from rewardgym.environments.example_single_tool_call.tools import GetWeatherArgs, GetWeatherResult
from rewardgym.environments.example_single_tool_call.verifier import (
    ExampleSingleToolCallConfig,
    ExampleSingleToolCallVerifyRequest,
    ExampleSingleToolCallVerifyResponse,
    verify,
)


class ExampleSingleToolCallServerConfig(ResourcesServerConfig, ExampleSingleToolCallConfig):
    """The ``resources_servers.example_single_tool_call`` YAML block: server fields only."""


@environment("example_single_tool_call")
class ExampleSingleToolCallServer(ResourcesServer[ExampleSingleToolCallServerConfig]):
    """``example_single_tool_call`` over HTTP (see the module docstring)."""

    reverify_mode = ExampleSingleToolCallConfig.REVERIFY_MODE

    @tool(description="")
    async def get_weather(self, args: GetWeatherArgs) -> GetWeatherResult:
        return tools.get_weather(args, {})

    async def verify(self, body: ExampleSingleToolCallVerifyRequest) -> ExampleSingleToolCallVerifyResponse:
        return verify(body, self.config)
