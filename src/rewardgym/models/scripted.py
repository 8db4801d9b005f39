"""``scripted``: a model server that answers from a script, in its own process — no upstream, no second
server, no network (inspect_ai's ``mockllm`` is the model). For an environment's tests and for trying
``gym eval run`` end to end before a real model is at hand::

    gym eval run --model-type scripted --resources-server mcqa --input data.jsonl \\
        '++policy_model.responses_api_models.scripted.answers=["\\boxed{B}"]'

Config (:class:`ScriptedModelServerConfig`): ``answers`` — the replies in order, cycled (a string is one
assistant message; a list is the output items of one turn, e.g. a ``function_call`` then, on the next call,
a message); or ``function`` — ``"package.module:callable"``, called in this process with each request's
``responses_create_params`` (a dict) and returning a string or a list of output items. ``model`` names the
model in every Response. Usage counts are the bytes of the input and the output divided by 4 (a stand-in:
there is no tokenizer). Our agents call only ``/v1/responses``; Chat
Completions answers 501.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Callable
from typing import Any

import orjson
from pydantic import Field, field_validator

from rewardgym.errors import ConfigError
from rewardgym.protocol import Response, ResponseCreateParams
from rewardgym.registry import register
from rewardgym.servers.config import ServerConfig
from rewardgym.servers.model import CallContext, ModelServer

Turn = str | list[dict[str, Any]]
"""One scripted reply: the text of an assistant message, or the output items of the turn."""


class ScriptedModelServerConfig(ServerConfig):
    """Settings of a ``scripted`` model instance."""

    answers: list[Turn] = Field(default_factory=lambda: list[Turn](["Answer: 42"]))
    """The replies in call order, cycled when used up (ignored when ``function`` is set)."""
    function: str | None = None
    """``"package.module:callable"`` answering each request (its ``responses_create_params`` dict) with a
    :data:`Turn`; imported when the server starts."""
    model: str = "scripted"
    """The model name every Response reports (and ``GET /v1/models`` lists)."""

    @field_validator("answers")
    @classmethod
    def _some_answer(cls, value: list[Turn]) -> list[Turn]:
        if not value:
            raise ValueError("needs at least one answer (or set 'function')")
        return value

    @field_validator("function")
    @classmethod
    def _module_and_name(cls, value: str | None) -> str | None:
        if value is not None and ":" not in value:
            raise ValueError(f"must be 'package.module:callable', got {value!r}")
        return value


def load_function(spec: str) -> Callable[[dict[str, Any]], Turn]:
    """The callable ``"package.module:callable"`` names."""
    module, _, name = spec.partition(":")
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError as exc:
        raise ConfigError(f"scripted.function {spec!r}: cannot import {module!r} ({exc})") from None
    if not callable(found):
        raise ConfigError(f"scripted.function {spec!r}: {name!r} is not a callable of {module!r}")
    return found  # type: ignore[no-any-return]


def output_items(turn: Turn) -> list[dict[str, Any]]:
    """A scripted reply as Responses output items (a string becomes one assistant message)."""
    if isinstance(turn, str):
        content = [{"type": "output_text", "text": turn, "annotations": []}]
        return [{"type": "message", "role": "assistant", "status": "completed", "content": content}]
    return [dict(item) for item in turn]


@register("responses_api_models", "scripted")
class ScriptedModel(ModelServer[ScriptedModelServerConfig]):
    """Answers every ``/v1/responses`` call from the script (module docstring)."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        cfg = self.config
        self._function = load_function(cfg.function) if cfg.function is not None else None
        self._turns = itertools.cycle(cfg.answers)
        self._ids = itertools.count(1)

    def model_ids(self) -> list[str]:
        return [self.config.model]

    async def responses(self, params: ResponseCreateParams, ctx: CallContext) -> Response:
        request = params.model_dump(mode="json", exclude_unset=True)
        turn = self._function(request) if self._function is not None else next(self._turns)
        output = output_items(turn)
        number = next(self._ids)
        prompt = max(1, len(orjson.dumps(request.get("input"))) // 4)
        completion = max(1, len(orjson.dumps(output)) // 4)
        usage = {"input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion}
        return Response.model_validate(
            {"id": f"resp_scripted_{number}", "created_at": 0.0, "model": self.config.model}
            | {"object": "response", "output": output, "usage": usage, "status": "completed"}
        )
