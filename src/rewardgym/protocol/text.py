"""Helpers every verifier needs: the text and the calls of a response."""

from __future__ import annotations

from rewardgym.protocol.responses import FunctionCall, Message, OutputText, Response


def output_text(response: Response) -> str:
    """All ``output_text`` parts of all message items, concatenated with no separator.

    This is the OpenAI SDK's ``Response.output_text``: reasoning, calls and call outputs add nothing.
    """
    parts: list[str] = []
    for item in response.output:
        if isinstance(item, Message) and not isinstance(item.content, str):
            parts.extend(p.text for p in item.content if isinstance(p, OutputText))
    return "".join(parts)


def last_assistant_message(response: Response) -> str | None:
    """The text of the last assistant message item, or ``None`` when there is none."""
    for item in reversed(response.output):
        if isinstance(item, Message) and item.role == "assistant":
            return item.text()
    return None


def function_calls(response: Response) -> list[FunctionCall]:
    """The function calls of a response, in output order."""
    return [item for item in response.output if isinstance(item, FunctionCall)]
