"""Tool calls for upstreams without tool support, emulated with a JSON-schema constrained reply.

SmolLM2's chat template has no tools and llama.cpp's server drops ``tools`` for it. With
``tool_calls_via_json_schema`` the adapter instead:

- asks for ``response_format = {"type": "json_schema", "json_schema": {"name": "reply", "schema": S}}``
  (accepted by llama.cpp's server, checked against the real one), where ``S`` is an ``anyOf`` with one
  branch per allowed tool — ``{"type": "tool_call", "name": <const name>, "arguments": <its parameters>}`` —
  plus, unless ``tool_choice`` is ``"required"`` or names a function, the final-answer branch
  ``{"type": "answer", "content": <string>}``;
- appends a short instruction listing the tools to the leading system message (or inserts one);
- rewrites history: an assistant turn's ``tool_calls`` become the JSON text of the call it made (the
  template would drop them otherwise); ``tool`` messages are kept;
- decodes the reply (:func:`decode_tool_reply`): a call object becomes a chat ``tool_calls`` entry with a
  fresh ``call_<hex>`` id, an answer object becomes the message text, and anything else (malformed or
  truncated JSON) is returned unchanged as plain text — never an exception.

``tool_choice: "none"`` removes the tools and asks for plain text. One call per turn.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from rewardgym.models.errors import UnsupportedRequestError
from rewardgym.protocol.responses import FunctionTool, ResponseCreateParams

ChatDict = dict[str, Any]

CALL_TAG = "tool_call"
"""``type`` of a call object (measured on SmolLM2-135M: it picks calls and answers sensibly with this tag)."""

ANSWER_TAG = "answer"

_ANSWER_BRANCH: ChatDict = {
    "type": "object",
    "properties": {"type": {"const": ANSWER_TAG}, "content": {"type": "string"}},
    "required": ["type", "content"],
    "additionalProperties": False,
}


def applies(params: ResponseCreateParams, enabled: bool) -> bool:
    """Whether a request is served through the JSON-schema emulation (tools given, choice not "none")."""
    return enabled and bool(params.tools) and params.tool_choice != "none"


def _allowed_tools(params: ResponseCreateParams) -> tuple[list[FunctionTool], bool]:
    """The tools the reply may call and whether a plain answer is allowed."""
    choice = params.tool_choice
    if isinstance(choice, dict):
        name = choice.get("name") or (choice.get("function") or {}).get("name")
        chosen = [tool for tool in params.tools if tool.name == name]
        if not chosen:
            raise UnsupportedRequestError(f"tool_choice names function {name!r}, which is not in 'tools'")
        return chosen, False
    return list(params.tools), choice != "required"


def _call_branch(tool: FunctionTool) -> ChatDict:
    return {
        "type": "object",
        "properties": {
            "type": {"const": CALL_TAG},
            "name": {"const": tool.name},
            "arguments": tool.parameters or {"type": "object"},
        },
        "required": ["type", "name", "arguments"],
        "additionalProperties": False,
    }


def reply_schema(tools: list[FunctionTool], allow_answer: bool) -> ChatDict:
    """The JSON schema of one reply: a call to one of ``tools`` or (if allowed) a final answer."""
    branches = [_call_branch(tool) for tool in tools]
    if allow_answer:
        branches.append(_ANSWER_BRANCH)
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def _describe_parameters(schema: dict[str, Any] | None) -> str:
    properties = (schema or {}).get("properties") or {}
    fields = []
    for name, prop in properties.items():
        kind = prop.get("type", "any") if isinstance(prop, dict) else "any"
        fields.append(f'"{name}": {kind if isinstance(kind, str) else "|".join(map(str, kind))}')
    return "{" + ", ".join(fields) + "}"


def instruction(tools: list[FunctionTool], allow_answer: bool) -> str:
    """The system-prompt text telling the model which functions exist and how to reply."""
    lines = ["Available functions:"]
    for tool in tools:
        about = f": {tool.description.strip()}" if tool.description and tool.description.strip() else ""
        lines.append(f"- {tool.name}{about}. Parameters: {_describe_parameters(tool.parameters)}")
    call = f'{{"type": "{CALL_TAG}", "name": "<function>", "arguments": {{...}}}}'
    if allow_answer:
        lines.append(
            f"Reply with one JSON object. To call a function: {call}. "
            f'To reply to the user: {{"type": "{ANSWER_TAG}", "content": "<text>"}}. '
            "Call a function when it can provide information you need; answer once you have the results."
        )
    else:
        lines.append(f"Reply with one JSON object that calls one of these functions: {call}.")
    return "\n".join(lines)


def _call_as_json(call: ChatDict) -> str:
    function = call.get("function") or {}
    raw = function.get("arguments", "")
    try:
        arguments: Any = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        arguments = raw
    return json.dumps({"type": CALL_TAG, "name": function.get("name"), "arguments": arguments})


def _rewrite_history(messages: list[ChatDict]) -> list[ChatDict]:
    rewritten = []
    for message in messages:
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if calls:
            text = message.get("content") or ""
            calls_text = "\n".join(_call_as_json(call) for call in calls)
            rewritten.append(
                {
                    **{k: v for k, v in message.items() if k != "tool_calls"},
                    "content": f"{text}\n{calls_text}" if text else calls_text,
                }
            )
        else:
            rewritten.append(message)
    return rewritten


def _add_instruction(messages: list[ChatDict], text: str) -> list[ChatDict]:
    if messages and messages[0].get("role") in ("system", "developer"):
        first = dict(messages[0])
        content = first.get("content")
        if isinstance(content, list):
            first["content"] = [*content, {"type": "text", "text": "\n\n" + text}]
        else:
            first["content"] = f"{content}\n\n{text}" if content else text
        return [first, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def rewrite_request(body: ChatDict, params: ResponseCreateParams) -> ChatDict:
    """Replace native ``tools`` in a chat body by the JSON-schema emulation (call only when tools exist)."""
    out = {k: v for k, v in body.items() if k not in ("tools", "tool_choice", "parallel_tool_calls")}
    messages = _rewrite_history(list(body.get("messages") or []))
    if params.tool_choice != "none":
        tools, allow_answer = _allowed_tools(params)
        messages = _add_instruction(messages, instruction(tools, allow_answer))
        out["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": reply_schema(tools, allow_answer)},
        }
    out["messages"] = messages
    return out


def decode_tool_reply(content: str | None, tool_names: set[str]) -> tuple[str | None, list[ChatDict]]:
    """``(message text, chat tool_calls)`` for a JSON-constrained reply; unparseable text is kept as text."""
    if not content:
        return content, []
    try:
        value = json.loads(content)
    except (json.JSONDecodeError, RecursionError):
        return content, []
    if not isinstance(value, dict):
        return content, []
    kind = value.get("type")
    if kind == ANSWER_TAG and isinstance(value.get("content"), str):
        return value["content"], []
    name, arguments = value.get("name"), value.get("arguments")
    if kind in (CALL_TAG, None) and name in tool_names and isinstance(arguments, dict):
        call = {
            "id": f"call_{uuid.uuid4().hex}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
        }
        return None, [call]
    return content, []
