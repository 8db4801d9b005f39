"""Everything an environment author needs, in one import.

An environment is a resources server: a config class, the row fields its verifier reads, the fields
``/verify`` returns, optional tools, and ``verify``::

    from rewardgym.env import (
        ResourcesServer, ResourcesServerConfig, ReverifyMode, VerifyRequest, VerifyResponse,
        environment, output_text,
    )

    class Config(ResourcesServerConfig):
        case_sensitive: bool = False
        \"\"\"Compare answers with case.\"\"\"

    class Row(VerifyRequest):
        expected_answer: str

    class Result(VerifyResponse):
        expected_answer: str
        extracted_answer: str | None = None

    @environment("exact_answer")
    class ExactAnswer(ResourcesServer[Config]):
        reverify_mode = ReverifyMode.STATELESS

        async def verify(self, body: Row) -> Result:
            answer = output_text(body.response).strip()
            ok = answer == body.expected_answer if self.config.case_sensitive else (
                answer.lower() == body.expected_answer.lower())
            return Result.of(body, reward=float(ok), extracted_answer=answer)

Each type is written once: the config class is the generic parameter, the request and response classes are
``verify``'s annotations (a ``seed_session`` body likewise), a tool's argument model is its first parameter
(:func:`tool`). ``docs/environments.md`` ("An environment in one file") runs this example end to end;
``gym env new NAME`` writes a working environment folder to start from.

What is here, by use:

- declaring: :class:`ResourcesServer`, :class:`ResourcesServerConfig`, :func:`environment`, :func:`tool`,
  :class:`Session` (per-episode state of stateful tools), :class:`ReverifyMode`;
- the wire types a verifier reads and writes: :class:`VerifyRequest`, :class:`VerifyResponse`,
  :class:`MultiRewardVerifyResponse`, :class:`SeedSessionRequest`, :class:`Response`,
  :class:`ResponseCreateParams`, :class:`Message`, :class:`FunctionCall`, and the readers
  :func:`output_text`, :func:`function_calls`, :func:`last_assistant_message`;
- failing honestly: :class:`JudgeError` (a judge or grader could not decide: the rollout is recorded as a
  classified failure, never as a reward), :class:`ApiError` (answer the caller with an HTTP status);
- metrics: :func:`pass_majority_metrics`, :func:`highest_k_metrics`, :func:`default_key_metrics`,
  :func:`select_key_metrics` for ``compute_metrics`` / ``get_key_metrics`` overrides.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from rewardgym.metrics.key_metrics import default_key_metrics, highest_k_metrics, select_key_metrics
from rewardgym.metrics.pass_at_k import pass_majority_metrics
from rewardgym.protocol import (
    FunctionCall,
    Message,
    MultiRewardVerifyResponse,
    Response,
    ResponseCreateParams,
    ReverifyMode,
    SeedSessionRequest,
    VerifyRequest,
    VerifyResponse,
    function_calls,
    last_assistant_message,
    output_text,
)
from rewardgym.registry import register
from rewardgym.servers.errors import ApiError, JudgeError
from rewardgym.servers.resources import ResourcesServer, ResourcesServerConfig
from rewardgym.servers.sessions import Session
from rewardgym.servers.tools import tool

__all__ = [
    "ApiError",
    "FunctionCall",
    "JudgeError",
    "Message",
    "MultiRewardVerifyResponse",
    "ResourcesServer",
    "ResourcesServerConfig",
    "Response",
    "ResponseCreateParams",
    "ReverifyMode",
    "SeedSessionRequest",
    "Session",
    "VerifyRequest",
    "VerifyResponse",
    "default_key_metrics",
    "environment",
    "function_calls",
    "highest_k_metrics",
    "last_assistant_message",
    "output_text",
    "pass_majority_metrics",
    "select_key_metrics",
    "tool",
]

S = TypeVar("S", bound=type[ResourcesServer])  # type: ignore[type-arg]


def environment(name: str) -> Callable[[S], S]:
    """Class decorator: register a :class:`ResourcesServer` subclass as the environment ``name`` (the key
    under ``resources_servers:`` in a config file). A class outside the package is also found without it,
    written ``module.path:ClassName`` in the config."""

    def decorate(cls: S) -> S:
        checked: object = cls
        if not (isinstance(checked, type) and issubclass(checked, ResourcesServer)):
            raise TypeError(f"@environment({name!r}) decorates a ResourcesServer subclass, not {cls!r}")
        register("resources_servers", name)(cls)
        return cls

    return decorate
