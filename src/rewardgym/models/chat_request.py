"""Responses request → Chat Completions request: the pure, config-free part
(docs/reference/environments.md §2.2).

Contract of :func:`responses_to_chat`:
- ``input`` as a string becomes one user message with content ``[{"type": "text", "text": …}]``.
- Items are converted in order. user/system/developer messages keep their role; string content stays a
  string, list content maps ``input_text`` → ``text`` and ``input_image`` → ``image_url`` (detail "auto").
- Consecutive assistant-side items (reasoning, assistant message, function_call) merge into ONE assistant
  message: reasoning summaries become ``<think>text</think>``, message text is appended as is, calls become
  ``tool_calls`` (``id`` = ``call_id``). The buffer is flushed by any other item and at the end, as
  ``{"role": "assistant", "content": text or None, "tool_calls": [...]}`` (``tool_calls`` only if any).
- ``function_call_output`` → ``{"role": "tool", "tool_call_id", "content"}`` (list outputs keep their
  ``input_text`` parts as ``text`` parts).
- ``instructions`` becomes a system message at index 0, merged ("\\n\\n") with the leading run of
  system/developer messages.
- ``max_output_tokens`` → ``max_tokens``; ``reasoning.effort`` → ``reasoning_effort``; tools become
  ``{"type": "function", "function": {name, description, parameters}}``; without tools, ``tool_choice`` and
  ``parallel_tool_calls`` are dropped (``tool_choice: "required"`` without tools is an error).
- Chat fields pass through only when the caller set them; Responses-only fields (``text``, ``include``,
  ``truncation``, ``background``, ``previous_response_id``, ``prompt``, ``max_tool_calls``) are dropped.
Anything untranslatable raises :class:`~rewardgym.models.errors.UnsupportedRequestError` naming the field.
"""

from __future__ import annotations

from typing import Any

from rewardgym.models.errors import UnsupportedRequestError
from rewardgym.protocol.responses import (
    FunctionCall,
    FunctionCallOutput,
    FunctionTool,
    InputImage,
    InputText,
    Message,
    OutputText,
    Reasoning,
    Refusal,
    ResponseCreateParams,
)

ChatDict = dict[str, Any]

_PASS_THROUGH = ("temperature", "top_p", "metadata", "user", "store", "service_tier", "top_logprobs")
"""Responses fields that Chat Completions also has, copied when the caller set them."""


def think(text: str) -> str:
    """Wrap reasoning text the way chat-template models write it."""
    return f"<think>{text}</think>"


def _content_part(part: object, where: str) -> ChatDict:
    if isinstance(part, InputText):
        return {"type": "text", "text": part.text}
    if isinstance(part, InputImage):
        if not part.image_url:
            raise UnsupportedRequestError(f"{where}: input_image needs image_url (file_id is not supported)")
        return {"type": "image_url", "image_url": {"url": part.image_url, "detail": part.detail or "auto"}}
    kind = getattr(part, "type", type(part).__name__)
    raise UnsupportedRequestError(f"{where}: content part type {kind!r} is not supported in this message")


def _message_content(message: Message, where: str) -> str | list[ChatDict]:
    if isinstance(message.content, str):
        return message.content
    return [_content_part(part, f"{where}.content[{i}]") for i, part in enumerate(message.content)]


def _assistant_text(message: Message) -> str:
    if isinstance(message.content, str):
        return message.content
    texts: list[str] = []
    for part in message.content:
        if isinstance(part, InputText | OutputText):
            texts.append(part.text)
        elif isinstance(part, Refusal):
            texts.append(part.refusal)
    return "".join(texts)


def _tool_output(item: FunctionCallOutput, where: str) -> str | list[ChatDict]:
    if isinstance(item.output, str):
        return item.output
    parts: list[ChatDict] = []
    for i, part in enumerate(item.output):
        if isinstance(part, dict) and part.get("type") == "input_text" and isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
        else:
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise UnsupportedRequestError(f"{where}.output[{i}]: output part type {kind!r} is not supported")
    return parts


class _AssistantBuffer:
    """Collects consecutive assistant-side items into one chat assistant message."""

    def __init__(self) -> None:
        self.active = False
        self.text: list[str] = []
        self.tool_calls: list[ChatDict] = []

    def reset(self) -> None:
        self.active = False
        self.text = []
        self.tool_calls = []

    def add_text(self, text: str) -> None:
        self.active = True
        self.text.append(text)

    def add_tool_call(self, call: ChatDict) -> None:
        self.active = True
        self.tool_calls.append(call)

    def flush_into(self, messages: list[ChatDict]) -> None:
        if not self.active:
            return
        text = "".join(self.text)
        message: ChatDict = {"role": "assistant", "content": text or None}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        messages.append(message)
        self.reset()


def input_to_messages(params: ResponseCreateParams) -> list[ChatDict]:
    """The chat messages for ``params.input`` (without the ``instructions`` merge)."""
    if isinstance(params.input, str):
        return [{"role": "user", "content": [{"type": "text", "text": params.input}]}]
    messages: list[ChatDict] = []
    buffer = _AssistantBuffer()
    for index, item in enumerate(params.input):
        where = f"input[{index}]"
        if isinstance(item, Reasoning):
            for summary in item.summary:
                if summary.text:
                    buffer.add_text(think(summary.text))
        elif isinstance(item, FunctionCall):
            buffer.add_tool_call(
                {
                    "id": item.call_id,
                    "type": "function",
                    "function": {"name": item.name, "arguments": item.arguments},
                }
            )
        elif isinstance(item, Message) and item.role == "assistant":
            buffer.add_text(_assistant_text(item))
            for position, call in enumerate((item.model_extra or {}).get("tool_calls") or []):
                if not isinstance(call, dict):
                    raise UnsupportedRequestError(f"{where}.tool_calls[{position}]: expected an object")
                buffer.add_tool_call(dict(call))
        elif isinstance(item, FunctionCallOutput):
            buffer.flush_into(messages)
            content = _tool_output(item, where)
            messages.append({"role": "tool", "tool_call_id": item.call_id, "content": content})
        elif isinstance(item, Message):
            buffer.flush_into(messages)
            messages.append({"role": item.role, "content": _message_content(item, where)})
        else:  # pragma: no cover - the Item union admits nothing else
            raise UnsupportedRequestError(f"{where}: item type {type(item).__name__!r} is not supported")
    buffer.flush_into(messages)
    return messages


def _plain_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def merge_instructions(messages: list[ChatDict], instructions: str | None) -> list[ChatDict]:
    """Put ``instructions`` first, merged with the leading system/developer messages into one system."""
    if instructions is None:
        return messages
    lead = 0
    while lead < len(messages) and messages[lead]["role"] in ("system", "developer"):
        lead += 1
    texts = [instructions, *(_plain_text(m["content"]) for m in messages[:lead])]
    return [{"role": "system", "content": "\n\n".join(texts)}, *messages[lead:]]


def chat_tool(tool: FunctionTool) -> ChatDict:
    """A Responses function tool in Chat Completions form (``type`` and ``strict`` dropped)."""
    function: ChatDict = {"name": tool.name}
    if tool.description is not None:
        function["description"] = tool.description
    if tool.parameters is not None:
        function["parameters"] = tool.parameters
    return {"type": "function", "function": function}


def chat_tool_choice(choice: str | dict[str, Any]) -> str | dict[str, Any]:
    """``{"type": "function", "name": N}`` → ``{"type": "function", "function": {"name": N}}``."""
    if isinstance(choice, dict) and choice.get("type") == "function" and "name" in choice:
        return {"type": "function", "function": {"name": choice["name"]}}
    return choice


def responses_to_chat(params: ResponseCreateParams) -> ChatDict:
    """Translate a Responses request into a Chat Completions body (no ``model``, no config applied)."""
    body: ChatDict = {"messages": merge_instructions(input_to_messages(params), params.instructions)}
    given = params.model_fields_set
    for name in _PASS_THROUGH:
        value = getattr(params, name)
        if name in given and value is not None:
            body[name] = value
    if params.max_output_tokens is not None:
        body["max_tokens"] = params.max_output_tokens
    effort = (params.reasoning or {}).get("effort")
    if effort is not None:
        body["reasoning_effort"] = effort
    if params.tools:
        body["tools"] = [chat_tool(tool) for tool in params.tools]
        if "tool_choice" in given and params.tool_choice is not None:
            body["tool_choice"] = chat_tool_choice(params.tool_choice)
        if "parallel_tool_calls" in given:
            body["parallel_tool_calls"] = params.parallel_tool_calls
    elif params.tool_choice == "required":
        raise UnsupportedRequestError("tool_choice: 'required' needs at least one tool in 'tools'")
    return body
