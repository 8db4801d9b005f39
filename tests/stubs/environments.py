"""Tiny test-only resources servers built on the real base class (importable by child processes).

- :class:`ExactMatchServer`: reward 1.0 when the response text, stripped, equals the row's ``expected_answer``
  or its ``\\boxed{X}`` content does; returns ``expected_answer`` and ``extracted_answer`` (mcqa-like shape).
- :class:`FlakyJudgeServer`: :class:`ExactMatchServer` whose judge fails for the rows of one expected answer.
- :class:`CounterServer`: the stateful counter of ``example_session_state_mgmt``
  (docs/reference/environments.md §6).
- :class:`WeatherServer`: the ``get_weather`` tool of ``example_single_tool_call``; reward always 1.0.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from rewardgym.metrics.key_metrics import highest_k_metrics
from rewardgym.metrics.pass_at_k import pass_majority_metrics
from rewardgym.protocol import ReverifyMode, VerifyRequest, VerifyResponse, output_text
from rewardgym.servers.config import ServerConfig
from rewardgym.servers.errors import JudgeError
from rewardgym.servers.resources import ResourcesServer, ResourcesServerConfig
from rewardgym.servers.sessions import Session
from rewardgym.servers.tools import tool

BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


class ExactMatchConfig(ResourcesServerConfig):
    """Config of the exact-match test environment."""

    case_sensitive: bool = True
    """Compare answers case-sensitively."""


class ExactMatchVerifyRequest(VerifyRequest):
    expected_answer: str = ""


class ExactMatchVerifyResponse(VerifyResponse):
    expected_answer: str
    extracted_answer: str | None


class ExactMatchServer(ResourcesServer[ExactMatchConfig]):
    config_class: ClassVar[type[ServerConfig]] = ExactMatchConfig
    verify_request_class = ExactMatchVerifyRequest
    verify_response_class = ExactMatchVerifyResponse
    reverify_mode = ReverifyMode.STATELESS

    async def verify(self, body: ExactMatchVerifyRequest) -> VerifyResponse:
        text = output_text(body.response).strip()
        boxed = BOXED.findall(text)
        extracted = (boxed[-1] if boxed else text) or None
        expected = body.expected_answer
        same = extracted is not None and (
            extracted == expected if self.config.case_sensitive else extracted.lower() == expected.lower()
        )
        return self.verify_response(body, reward=1.0 if same else 0.0, extracted_answer=extracted)

    def compute_metrics(self, tasks: list[list[dict[str, Any]]]) -> dict[str, Any]:
        metrics, _ = pass_majority_metrics(tasks, answer_key="extracted_answer")
        return metrics

    def get_key_metrics(self, agent_metrics: Any) -> dict[str, Any]:
        return {
            **{k: v for k, v in agent_metrics.items() if k == "mean/reward"},
            **highest_k_metrics(agent_metrics, "pass@{k}", score_names=["accuracy"]),
        }


class FlakyJudgeConfig(ExactMatchConfig):
    judge_down_for: str | None = None
    """Rows whose expected answer is this fail as a judge failure does (the judge is down for them)."""


class FlakyJudgeServer(ExactMatchServer):
    """:class:`ExactMatchServer` whose judge fails (``JudgeError``) for the rows ``judge_down_for`` names."""

    config_class: ClassVar[type[ServerConfig]] = FlakyJudgeConfig

    async def verify(self, body: ExactMatchVerifyRequest) -> VerifyResponse:
        down = getattr(self.config, "judge_down_for", None)
        if down is not None and body.expected_answer == down:
            raise JudgeError("the judge is down")
        return await super().verify(body)


class CounterSeed(BaseModel):
    model_config = ConfigDict(extra="allow")
    initial_count: int = 0


class CounterVerifyRequest(VerifyRequest):
    expected_count: int


class IncrementArgs(BaseModel):
    count: int
    """How much to add."""


class EmptyArgs(BaseModel):
    pass


class CounterServer(ResourcesServer[ResourcesServerConfig]):
    seed_session_request_class = CounterSeed
    verify_request_class = CounterVerifyRequest

    async def seed_session(self, body: CounterSeed) -> None:
        session = self.current_session()
        assert session is not None
        session.state.setdefault("counter", body.initial_count)

    @tool
    async def increment_counter(self, args: IncrementArgs, session: Session) -> dict[str, Any]:
        """Add ``count`` to the counter."""
        session.state["counter"] = session.state.get("counter", 0) + args.count
        return {"success": True}

    @tool
    async def get_counter_value(self, args: EmptyArgs, session: Session) -> dict[str, Any]:
        """The current counter value."""
        return {"count": session.state.setdefault("counter", 0)}

    async def verify(self, body: CounterVerifyRequest) -> VerifyResponse:
        session = self.current_session(create=False)
        counter = session.state.get("counter") if session else None
        return self.verify_response(
            body, reward=float(counter is not None and counter == body.expected_count)
        )


class WeatherArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    city: str
    """The city to look up."""


class WeatherResult(BaseModel):
    city: str
    weather_description: str


class WeatherServer(ResourcesServer[ResourcesServerConfig]):
    @tool
    async def get_weather(self, args: WeatherArgs) -> WeatherResult:
        """Current weather of a city."""
        return WeatherResult(city=args.city, weather_description=f"The weather in {args.city} is cold.")

    async def verify(self, body: VerifyRequest) -> VerifyResponse:
        return self.verify_response(body, reward=1.0)


class CrashingServer(ResourcesServer[ResourcesServerConfig]):
    """Fails during start-up, after logging a line (tests the supervisor's log tail)."""

    async def on_startup(self) -> None:
        self.log.error("cannot load the answer key: /nonexistent/answers.csv")
        raise RuntimeError("start-up failed on purpose")
