"""The subset of the OpenAI Chat Completions API that model adapters speak to upstreams."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rewardgym.protocol.responses import Int64

_OPEN = ConfigDict(extra="allow")


class ChatFunction(BaseModel):
    model_config = _OPEN
    name: str
    arguments: str = ""


class ChatToolCall(BaseModel):
    model_config = _OPEN
    id: str
    type: Literal["function"] = "function"
    function: ChatFunction


class ChatMessage(BaseModel):
    model_config = _OPEN
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[ChatToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    reasoning_content: str | None = None


class ChatToolFunction(BaseModel):
    model_config = _OPEN
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ChatTool(BaseModel):
    model_config = _OPEN
    type: Literal["function"] = "function"
    function: ChatToolFunction


class ChatCompletionCreateParams(BaseModel):
    """Body of ``POST /v1/chat/completions``; unknown keys are kept (upstreams accept many extensions)."""

    model_config = _OPEN
    messages: list[ChatMessage]
    model: str | None = None
    tools: list[ChatTool] | None = None
    tool_choice: str | dict[str, Any] | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: Int64 | None = None
    max_completion_tokens: Int64 | None = None
    seed: Int64 | None = None
    stop: str | list[str] | None = None
    n: Int64 | None = None
    stream: bool | None = None
    response_format: dict[str, Any] | None = None


class PromptTokensDetails(BaseModel):
    model_config = _OPEN
    cached_tokens: int | None = None


class CompletionTokensDetails(BaseModel):
    model_config = _OPEN
    reasoning_tokens: int | None = None


class ChatUsage(BaseModel):
    model_config = _OPEN
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    prompt_tokens_details: PromptTokensDetails | None = None
    completion_tokens_details: CompletionTokensDetails | None = None


class ChatChoice(BaseModel):
    model_config = _OPEN
    index: int = 0
    message: ChatMessage
    finish_reason: str | None = None
    logprobs: dict[str, Any] | None = None


class ChatCompletion(BaseModel):
    model_config = _OPEN
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice] = Field(default_factory=list)
    usage: ChatUsage | None = None
