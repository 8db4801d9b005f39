"""HTTP server of ``example_multi_step``: the two synonym tools and the ordered-list verify.

Contract (registered as resources server ``example_multi_step``):

- Config: :class:`ExampleMultiStepServerConfig` = the resources-server fields (unknown keys are errors) plus
  :class:`~.verifier.ExampleMultiStepConfig` (no fields).
- ``POST /get_synonym_value {"synonym": str}`` → ``{"synonym_value": int}`` and
  ``POST /extract_synonym_values {"synonym_values": [int]}`` → ``{"success": true}`` (:mod:`.tools`,
  stateless). Their declarations carry the rows' descriptions (which quote the result schemas) and the rows'
  ``parameters``, except that the shared tool machinery strips the per-property ``title`` keys and trims the
  descriptions' trailing newline.
- ``POST /verify`` → :func:`.verifier.verify` (reward, ``parsed_synonym_values``, ``accuracy``,
  ``set_overlap``, ``original_term_minefield_hit``, ``order_instruction_following_failure``).
- ``GET /reverify_mode`` → ``"stateless"`` (verify reads only the row and the response; NeMo Gym:
  ``unknown``).
- Metrics: the statistics baseline plus ``pass@k`` / ``pass@1[avg-of-k]`` of the reward as ``accuracy``; key
  metrics are every ``mean/*`` entry and those two families at the largest k.
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
from rewardgym.environments.example_multi_step import tools
from rewardgym.environments.example_multi_step.tools import (
    ExtractSynonymValuesArgs,
    ExtractSynonymValuesResult,
    GetSynonymValueArgs,
    GetSynonymValueResult,
)
from rewardgym.environments.example_multi_step.verifier import (
    ExampleMultiStepConfig,
    ExampleMultiStepVerifyRequest,
    ExampleMultiStepVerifyResponse,
    verify,
)

_RETURNS = "\nThis operation returns a value that conforms to the following JSON Schema: "
GET_SYNONYM_VALUE_DESCRIPTION = (
    "Get the synonym value for a synonym."
    + _RETURNS
    + '{"properties": {"synonym_value": {"type": "integer", "title": "Synonym Value", "description": '
    '"The value for this synonym."}}, "type": "object", "required": ["synonym_value"]}\n'
)
EXTRACT_SYNONYM_VALUES_DESCRIPTION = (
    "Extract the synonym values you retrieved for the term that is relevant to the user query."
    + _RETURNS
    + '{"properties": {"success": {"type": "boolean", "title": "Success", "description": "Success."}}, '
    '"type": "object", "required": ["success"]}\n'
)


class ExampleMultiStepServerConfig(ResourcesServerConfig, ExampleMultiStepConfig):
    """The ``resources_servers.example_multi_step`` YAML block: server fields only."""


@environment("example_multi_step")
class ExampleMultiStepServer(ResourcesServer[ExampleMultiStepServerConfig]):
    """``example_multi_step`` over HTTP (see the module docstring)."""

    reverify_mode = ExampleMultiStepConfig.REVERIFY_MODE

    @tool(description=GET_SYNONYM_VALUE_DESCRIPTION)
    async def get_synonym_value(self, args: GetSynonymValueArgs) -> GetSynonymValueResult:
        return tools.get_synonym_value(args, {})

    @tool(description=EXTRACT_SYNONYM_VALUES_DESCRIPTION)
    async def extract_synonym_values(self, args: ExtractSynonymValuesArgs) -> ExtractSynonymValuesResult:
        return tools.extract_synonym_values(args, {})

    async def verify(self, body: ExampleMultiStepVerifyRequest) -> ExampleMultiStepVerifyResponse:
        return verify(body, self.config)

    def compute_metrics(self, tasks: list[list[dict[str, Any]]]) -> Mapping[str, Any]:
        return pass_majority_metrics(tasks)[0]

    def get_key_metrics(self, agent_metrics: Mapping[str, Any]) -> Mapping[str, Any]:
        return {
            **default_key_metrics(agent_metrics),
            **highest_k_metrics(agent_metrics, "pass@{k}"),
            **highest_k_metrics(agent_metrics, "pass@1[avg-of-{k}]"),
        }
