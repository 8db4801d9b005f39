"""HTTP server of ``math_with_judge``: math-verify in killable children, optional LLM judge over HTTP.

Contract (registered as resources server ``math_with_judge``):

- Config: :class:`MathWithJudgeServerConfig` = the resources-server fields (unknown keys are errors) plus
  :class:`~.verifier.MathWithJudgeConfig` (``judge_model_server``, ``judge_responses_create_params``,
  ``should_use_judge``, ``library_verifier_timeout_seconds``, ``library_verifier_max_concurrency``). With the
  judge on, ``judge_model_server`` must resolve (``peers`` or its ``url``) when the server is built: a
  dangling reference is a :class:`~rewardgym.errors.ConfigError` naming the field, not a failure per row.
- Start-up (inside the event loop): one :class:`~.library.LibraryVerifier` per server, warmed by one check so
  a broken math-verify stops the start with a clear error instead of scoring zeros; closed at shutdown.
- ``POST /verify``: body :class:`~.verifier.MathWithJudgeVerifyRequest` (``question`` and
  ``expected_answer`` required → HTTP 422 naming them); the answer holds exactly ``responses_create_params,
  response, reward, expected_answer, extracted_answer, library_reward, judge_evaluations``.
- The judge is ``POST <judge_model_server>/v1/responses`` through the server's pooled client (its retry
  policy, the peer auth header). Any failure of that call (transport, timeout, non-2xx, a body that is not a
  Response) is a :class:`rewardgym.servers.errors.JudgeError`: HTTP 200 with ``reward: 0.0`` and
  ``_ng_failure_class: "judge_failed"`` (message redacted) — a classified failure, never a reward.
- No tools; ``seed_session`` is the default no-op. ``GET /reverify_mode`` → ``"unknown"`` (as NeMo Gym):
  verify needs no session, but its reward may come from an external LLM judge and math-verify's own 5 s
  alarms make hard comparisons depend on CPU speed, so a replay is not guaranteed to reproduce it.
- Metrics: the statistics baseline plus pass@k / pass@1[avg-of-k] / majority@k over ``symbolic_accuracy``
  (and ``judge_accuracy`` for judged rows) with ``extracted_answer`` as the answer; key metrics as declared
  in :mod:`.metrics`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict

from rewardgym.config.secrets import redact_text
from rewardgym.env import (
    ApiError,
    JudgeError,
    ResourcesServer,
    ResourcesServerConfig,
    Response,
    ResponseCreateParams,
    ReverifyMode,
    environment,
    pass_majority_metrics,
    select_key_metrics,
)
from rewardgym.environments.math_with_judge import judge, metrics
from rewardgym.environments.math_with_judge.library import LibraryVerifier
from rewardgym.environments.math_with_judge.verifier import (
    MathWithJudgeConfig,
    MathWithJudgeVerifyRequest,
    MathWithJudgeVerifyResponse,
    verify,
)
from rewardgym.errors import ServerError
from rewardgym.protocol import dump

JUDGE_PATH = "/v1/responses"
WARMUP = ("\\frac{1}{2}", "\\boxed{0.5}")
"""``(expected_answer, generated)`` graded once at start-up; it must score 1.0."""


class MathWithJudgeServerConfig(ResourcesServerConfig, MathWithJudgeConfig):
    """The ``resources_servers.math_with_judge`` YAML block: server fields plus the verifier's fields."""

    model_config = ConfigDict(extra="forbid")


def key_metrics(agent_metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The headline metrics of :mod:`.metrics` (first keys, highest-k families, last keys; when present)."""
    return select_key_metrics(
        agent_metrics, metrics.KEY_METRICS_FIRST, metrics.KEY_METRICS_HIGHEST_K, metrics.KEY_METRICS_LAST
    )


@environment("math_with_judge")
class MathWithJudgeServer(ResourcesServer[MathWithJudgeServerConfig]):
    """``math_with_judge`` over HTTP (see the module docstring)."""

    reverify_mode = ReverifyMode.UNKNOWN

    def __init__(self, config: MathWithJudgeServerConfig | Mapping[str, Any]) -> None:
        super().__init__(config)
        self.judge_url: str | None = None
        if self.config.should_use_judge:
            base = self.config.peer_url(self.config.judge_model_server, "judge_model_server")
            self.judge_url = base + JUDGE_PATH
        self._library: LibraryVerifier | None = None

    async def on_startup(self) -> None:
        await super().on_startup()
        library = self.config.library_verifier()
        self._library = library
        reward, _ = await library.check(*WARMUP)
        if reward != 1.0:
            raise ServerError(f"{self.config.name}: math-verify does not work here (warm-up scored {reward})")

    async def on_shutdown(self) -> None:
        try:
            if self._library is not None:
                await self._library.aclose()
                self._library = None
        finally:
            await super().on_shutdown()

    async def judge_post(self, params: ResponseCreateParams) -> Response:
        """One judge call: ``POST <judge_model_server>/v1/responses``; raises on any failure."""
        if self.judge_url is None:
            raise judge.JudgeError("should_use_judge is false: no judge model server is configured")
        reply = await self.http.post(self.judge_url, json=dump(params), headers=self.peer_headers)
        return reply.parse(Response)

    async def verify(self, body: MathWithJudgeVerifyRequest) -> MathWithJudgeVerifyResponse:
        if self._library is None:
            raise ApiError(503, "the math-verify helper is not running", kind="unavailable")
        try:
            return await verify(body, self.config, library=self._library, judge_post=self.judge_post)
        except judge.JudgeError as exc:
            raise JudgeError(redact_text(str(exc))) from exc

    def compute_metrics(self, tasks: list[list[dict[str, Any]]]) -> Mapping[str, Any]:
        scores, _ = pass_majority_metrics(tasks, score_fn=metrics.score_fn, answer_key=metrics.ANSWER_KEY)
        return scores

    def get_key_metrics(self, agent_metrics: Mapping[str, Any]) -> Mapping[str, Any]:
        return key_metrics(agent_metrics)
