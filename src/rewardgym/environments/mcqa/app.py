"""HTTP server of ``mcqa``: ``/verify`` grades the answer letter with :func:`.verifier.verify`.

Contract (registered as resources server ``mcqa``):

- Config: :class:`MCQAServerConfig` = the resources-server fields (unknown keys are errors) plus
  :class:`~.verifier.MCQAConfig` (``grading_mode``, null = each row's mode).
- ``POST /verify``: body :class:`~.verifier.MCQAVerifyRequest` (HTTP 422 naming the field, e.g. an unknown
  ``grading_mode``); the answer holds exactly ``responses_create_params, response, reward, expected_answer,
  extracted_answer``. A ``template_metadata.output_regex`` with two or more groups is the row's fault: HTTP
  422 whose ``detail`` ``loc`` is ``body.template_metadata.output_regex`` (NeMo Gym: HTTP 500; no reward
  either way).
- No tools; ``seed_session`` is the default no-op. ``GET /reverify_mode`` → ``"stateless"`` (as NeMo Gym):
  verify reads only the row and the response.
- ``POST /aggregate_metrics``: the statistics baseline plus pass@k / pass@1[avg-of-k] / majority@k over
  ``accuracy = reward`` with ``extracted_answer`` as the answer (adds ``no_answer``); key metrics as declared
  in :mod:`.metrics`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import ConfigDict

from rewardgym.env import (
    ResourcesServer,
    ResourcesServerConfig,
    environment,
    pass_majority_metrics,
    select_key_metrics,
)
from rewardgym.environments.mcqa import metrics
from rewardgym.environments.mcqa.verifier import MCQAConfig, MCQAVerifyRequest, MCQAVerifyResponse, verify
from rewardgym.errors import DataError

TEMPLATE_REGEX_LOC = ("body", "template_metadata", "output_regex")
"""Where a bad template regex is reported in the 422 answer."""


class MCQAServerConfig(ResourcesServerConfig, MCQAConfig):
    """The ``resources_servers.mcqa`` YAML block: server fields plus ``grading_mode``."""

    model_config = ConfigDict(extra="forbid")


def key_metrics(agent_metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The headline metrics of :mod:`.metrics` (first keys, highest-k families, last keys; when present)."""
    return select_key_metrics(
        agent_metrics, metrics.KEY_METRICS_FIRST, metrics.KEY_METRICS_HIGHEST_K, metrics.KEY_METRICS_LAST
    )


@environment("mcqa")
class MCQAServer(ResourcesServer[MCQAServerConfig]):
    """``mcqa`` over HTTP (see the module docstring)."""

    reverify_mode = MCQAConfig.REVERIFY_MODE

    async def verify(self, body: MCQAVerifyRequest) -> MCQAVerifyResponse:
        try:
            return verify(body, self.config)
        except DataError as exc:
            error = {"type": "value_error", "loc": list(TEMPLATE_REGEX_LOC), "msg": str(exc)}
            raise RequestValidationError([error]) from None

    def compute_metrics(self, tasks: list[list[dict[str, Any]]]) -> Mapping[str, Any]:
        scores, _ = pass_majority_metrics(tasks, score_fn=metrics.score_fn, answer_key=metrics.ANSWER_KEY)
        return scores

    def get_key_metrics(self, agent_metrics: Mapping[str, Any]) -> Mapping[str, Any]:
        return key_metrics(agent_metrics)
