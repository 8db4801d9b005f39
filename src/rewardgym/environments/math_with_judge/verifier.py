r"""``math_with_judge`` verify: symbolic equivalence of the final answer (math-verify), optional LLM judge.

Contract (NeMo Gym ``resources_servers/math_with_judge``, ``docs/reference/environments.md`` §8):

- Row fields read: ``question`` (judge prompt only) and ``expected_answer``, both required; other row fields
  are ignored.
- ``generated = output_text(response)`` (all ``output_text`` parts of all message items, no separator).
- Library path (:mod:`.library`): math-verify compares ``\boxed{expected}`` with ``generated`` in a killable
  child (``library_verifier_timeout_seconds``, ``library_verifier_max_concurrency``) → ``library_reward``,
  ``extracted_answer``. No assistant message is the empty text → ``(0.0, null)``.
- If ``should_use_judge`` is false or ``library_reward > 0.5``: ``reward = library_reward``,
  ``judge_evaluations = null``. Otherwise the judge (:mod:`.judge`) decides, judging ``extracted_answer`` if
  truthy else the whole text; a failed judge call raises :class:`~.judge.JudgeError` (the server's failsafe
  classifies it as ``judge_failed``), and so does an enabled judge with no ``judge_post`` wired.
- Response keys: ``responses_create_params, response, reward, expected_answer`` (raw),
  ``extracted_answer, library_reward, judge_evaluations``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, PositiveFloat, PositiveInt

from rewardgym.environments.math_with_judge.judge import JudgeError, JudgeEvaluation, JudgePost, judge
from rewardgym.environments.math_with_judge.library import LibraryVerifier
from rewardgym.protocol import ResponseCreateParams, VerifyRequest, VerifyResponse, output_text
from rewardgym.servers.config import ServerRef

LIBRARY_PASS_THRESHOLD = 0.5
"""A library reward above this is final; at or below it the judge (when enabled) decides."""


class MathWithJudgeConfig(BaseModel):
    """Environment config of ``math_with_judge`` (the ``resources_servers.math_with_judge`` YAML block)."""

    model_config = ConfigDict(extra="forbid")

    judge_model_server: ServerRef
    """The model server the judge calls at ``/v1/responses`` (required even when the judge is off)."""

    judge_responses_create_params: ResponseCreateParams
    """Base judge request (model, temperature …); its ``input`` is replaced on every call."""

    should_use_judge: bool = True
    """Ask the judge when the library reward is ≤ 0.5 (``configs/math_with_judge.yaml`` sets false)."""

    library_verifier_timeout_seconds: PositiveFloat = 10.0
    """Hard wall-clock limit of one math-verify child; it is killed and scores 0.0 when exceeded."""

    library_verifier_max_concurrency: PositiveInt = 32
    """At most this many math-verify children run at once."""

    def library_verifier(self) -> LibraryVerifier:
        """A :class:`LibraryVerifier` with this config's limits (one per server and event loop; close it)."""
        return LibraryVerifier(self.library_verifier_timeout_seconds, self.library_verifier_max_concurrency)


class MathWithJudgeVerifyRequest(VerifyRequest):
    """A ``math_with_judge`` row plus the episode's final response."""

    model_config = ConfigDict(extra="ignore")

    question: str
    """The problem statement (used only in the judge prompt)."""

    expected_answer: str
    """The gold answer (LaTeX or plain; outer ``\\(...\\)`` / ``$...$`` are dropped before math-verify)."""


class MathWithJudgeVerifyResponse(VerifyResponse):
    """``math_with_judge`` verify result; its fields are the rollout row's columns."""

    expected_answer: str
    """The row's expected answer, unchanged."""

    extracted_answer: str | None
    """math-verify's string form of the chosen prediction (e.g. ``sqrt(2)``), or null."""

    library_reward: float
    """math-verify's score (1.0 or 0.0)."""

    judge_evaluations: list[JudgeEvaluation] | None
    """The judge calls made (1 or 2), or null when the judge was not asked."""


async def verify(
    body: MathWithJudgeVerifyRequest,
    config: MathWithJudgeConfig,
    *,
    library: LibraryVerifier | None = None,
    judge_post: JudgePost | None = None,
) -> MathWithJudgeVerifyResponse:
    """Grade one rollout. ``library`` is the server's shared :class:`LibraryVerifier` (when omitted a
    temporary one is started and stopped, ~1 s); ``judge_post`` performs the judge HTTP call."""
    generated = output_text(body.response)
    if library is not None:
        library_reward, extracted = await library.check(body.expected_answer, generated)
    else:
        async with config.library_verifier() as own:
            library_reward, extracted = await own.check(body.expected_answer, generated)
    reward = library_reward
    evaluations: list[JudgeEvaluation] | None = None
    if config.should_use_judge and library_reward <= LIBRARY_PASS_THRESHOLD:
        if judge_post is None:
            raise JudgeError("should_use_judge is true but no judge model server call is wired")
        reward, evaluations = await judge(
            config.judge_responses_create_params,
            body.question,
            body.expected_answer,
            extracted or generated,
            judge_post,
        )
    return MathWithJudgeVerifyResponse(
        responses_create_params=body.responses_create_params,
        response=body.response,
        reward=reward,
        expected_answer=body.expected_answer,
        extracted_answer=extracted,
        library_reward=library_reward,
        judge_evaluations=evaluations,
    )
