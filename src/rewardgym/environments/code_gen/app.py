"""HTTP server of ``code_gen``: run the answer's last fenced code block against the row's tests, sandboxed.

Contract (registered as resources server ``code_gen``):

- Config: :class:`CodeGenServerConfig` = the resources-server fields (unknown keys are errors) plus every
  :class:`~.config.CodeGenConfig` field (``num_processes`` accepted as ``max_concurrent_executions``).
- Start-up: one :class:`~.sandbox.CodeSandbox` per server, probed with ``ensure_available()``. When the
  sandbox cannot isolate solutions and ``require_network_isolation`` is true, the server logs the reason and
  **refuses to start** (no code is ever run unconfined by accident).
- ``POST /verify`` → :func:`.verifier.verify` with that sandbox (no tools; ``seed_session`` is the no-op).
  A row without ``verifier_metadata.unit_tests`` is HTTP 422 naming the field. A failure of the sandbox
  itself (:class:`~.sandbox.SandboxError`, including :class:`~.sandbox.SandboxUnavailableError`) is HTTP
  **503** ``sandbox_unavailable``: an infrastructure fault the collector retries or classifies — never a
  400 and never a reward.
- ``GET /reverify_mode`` → ``"stateless"`` (verify needs only the row and the response; NeMo Gym:
  ``unknown``).
- Metrics: the statistics baseline plus ``pass@k`` / ``pass@1[avg-of-k]`` of the reward as ``accuracy``; key
  metrics are every ``mean/*`` entry and those two families at the largest k.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewardgym.env import (
    ApiError,
    ResourcesServer,
    ResourcesServerConfig,
    default_key_metrics,
    environment,
    highest_k_metrics,
    pass_majority_metrics,
)
from rewardgym.environments.code_gen.config import CodeGenConfig
from rewardgym.environments.code_gen.sandbox import CodeSandbox, SandboxError, SandboxUnavailableError
from rewardgym.environments.code_gen.verifier import CodeGenVerifyRequest, CodeGenVerifyResponse, verify

SANDBOX_UNAVAILABLE = "sandbox_unavailable"
"""The error ``type`` of a 503 answer."""


class CodeGenServerConfig(ResourcesServerConfig, CodeGenConfig):
    """The ``resources_servers.code_gen`` YAML block: server fields plus the code_gen and sandbox settings."""


@environment("code_gen")
class CodeGenServer(ResourcesServer[CodeGenServerConfig]):
    """``code_gen`` over HTTP (see the module docstring)."""

    reverify_mode = CodeGenConfig.REVERIFY_MODE

    def __init__(self, config: CodeGenServerConfig | Mapping[str, Any]) -> None:
        super().__init__(config)
        self._sandbox: CodeSandbox | None = None

    async def on_startup(self) -> None:
        await super().on_startup()
        sandbox = CodeSandbox(self.config)
        try:
            found = await sandbox.ensure_available()
        except SandboxUnavailableError as exc:
            self.log.error("refusing to start: %s", exc)
            raise
        self.log.info("code_gen sandbox: %s isolation (%s)", found.mode, found.detail)
        self._sandbox = sandbox

    @property
    def sandbox(self) -> CodeSandbox:
        """The server's sandbox (created at start-up)."""
        if self._sandbox is None:
            raise SandboxError("the code_gen sandbox is not ready (the server has not started)")
        return self._sandbox

    async def verify(self, body: CodeGenVerifyRequest) -> CodeGenVerifyResponse:
        try:
            return await verify(body, self.config, self.sandbox)
        except SandboxError as exc:
            self.log.error("sandbox failure: %s", exc)
            raise ApiError(503, f"code_gen sandbox failure: {exc}", kind=SANDBOX_UNAVAILABLE) from None

    def compute_metrics(self, tasks: list[list[dict[str, Any]]]) -> Mapping[str, Any]:
        return pass_majority_metrics(tasks)[0]

    def get_key_metrics(self, agent_metrics: Mapping[str, Any]) -> Mapping[str, Any]:
        return {
            **default_key_metrics(agent_metrics),
            **highest_k_metrics(agent_metrics, "pass@{k}"),
            **highest_k_metrics(agent_metrics, "pass@1[avg-of-{k}]"),
        }
