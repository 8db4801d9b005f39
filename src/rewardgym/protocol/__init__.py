"""Wire types of the NeMo Gym contract: Responses API subset, Chat Completions subset, environment bodies.

The names below load lazily, each from its module on first access: ``from rewardgym.protocol import keys``
(the contract's key names, plain strings) therefore costs no pydantic import — the profiler and the
analysis reader, which read plain JSON, use it without paying for the models (a test holds this).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rewardgym.protocol import keys
    from rewardgym.protocol.chat import (
        ChatChoice,
        ChatCompletion,
        ChatCompletionCreateParams,
        ChatMessage,
        ChatTool,
        ChatToolCall,
        ChatUsage,
    )
    from rewardgym.protocol.environment import (
        AgentRef,
        AggregateMetrics,
        AggregateMetricsRequest,
        MultiRewardVerifyResponse,
        ReverifyMode,
        RunRequest,
        SeedSessionRequest,
        SeedSessionResponse,
        VerifyRequest,
        VerifyResponse,
    )
    from rewardgym.protocol.responses import (
        FunctionCall,
        FunctionCallOutput,
        FunctionTool,
        InputText,
        Item,
        Message,
        OutputText,
        Reasoning,
        Response,
        ResponseCreateParams,
        SummaryText,
        Usage,
        dump,
    )
    from rewardgym.protocol.text import function_calls, last_assistant_message, output_text

_PUBLIC = {
    "AgentRef": "environment",
    "AggregateMetrics": "environment",
    "AggregateMetricsRequest": "environment",
    "ChatChoice": "chat",
    "ChatCompletion": "chat",
    "ChatCompletionCreateParams": "chat",
    "ChatMessage": "chat",
    "ChatTool": "chat",
    "ChatToolCall": "chat",
    "ChatUsage": "chat",
    "FunctionCall": "responses",
    "FunctionCallOutput": "responses",
    "FunctionTool": "responses",
    "InputText": "responses",
    "Item": "responses",
    "Message": "responses",
    "MultiRewardVerifyResponse": "environment",
    "OutputText": "responses",
    "Reasoning": "responses",
    "Response": "responses",
    "ResponseCreateParams": "responses",
    "ReverifyMode": "environment",
    "RunRequest": "environment",
    "SeedSessionRequest": "environment",
    "SeedSessionResponse": "environment",
    "SummaryText": "responses",
    "Usage": "responses",
    "VerifyRequest": "environment",
    "VerifyResponse": "environment",
    "dump": "responses",
    "function_calls": "text",
    "keys": "keys",
    "last_assistant_message": "text",
    "output_text": "text",
}
__all__ = [
    "AgentRef",
    "AggregateMetrics",
    "AggregateMetricsRequest",
    "ChatChoice",
    "ChatCompletion",
    "ChatCompletionCreateParams",
    "ChatMessage",
    "ChatTool",
    "ChatToolCall",
    "ChatUsage",
    "FunctionCall",
    "FunctionCallOutput",
    "FunctionTool",
    "InputText",
    "Item",
    "Message",
    "MultiRewardVerifyResponse",
    "OutputText",
    "Reasoning",
    "Response",
    "ResponseCreateParams",
    "ReverifyMode",
    "RunRequest",
    "SeedSessionRequest",
    "SeedSessionResponse",
    "SummaryText",
    "Usage",
    "VerifyRequest",
    "VerifyResponse",
    "dump",
    "function_calls",
    "keys",
    "last_assistant_message",
    "output_text",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded = importlib.import_module(f"rewardgym.protocol.{module}")
    value = loaded if module == name else getattr(loaded, name)
    globals()[name] = value  # later accesses skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
