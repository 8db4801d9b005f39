"""Responses API items to script a model turn or build a recorded response by hand in a test."""

from __future__ import annotations

from typing import Any


def function_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """A ``function_call`` output item (``arguments`` is the JSON text the model wrote, valid or not)."""
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def message(text: str) -> dict[str, Any]:
    """An assistant ``message`` output item with one ``output_text`` part."""
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def response(output: list[dict[str, Any]]) -> dict[str, Any]:
    """A minimal Responses API response body around ``output``."""
    return {"id": "r", "created_at": 0.0, "model": "m", "output": output}
