"""The calls of a NeMo Gym 0.7.0 trajectory, normalised, and how the turns' references bind to them
(docs/reference/health_check.md §2.3) — the parts of :mod:`.trajectory_checks` that read one record's calls.

Pure functions over a parsed ``ng_trajectory``; no check is decided here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_CONTENT_KEYS = (
    "text", "content", "output_text", "answer", "refusal", "encrypted_content", "reasoning",
    "reasoning_content", "summary",
)  # fmt: skip
_TOOL_TYPES = {
    "function_call", "tool_call", "tool_use", "mcp_call", "mcp_list_tools", "mcp_approval_request",
    "file_search_call", "web_search_call", "computer_call", "image_generation_call", "code_interpreter_call",
    "local_shell_call", "custom_tool_call",
}  # fmt: skip


def nonempty(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, list):
        return any(nonempty(item) for item in value)
    if isinstance(value, dict):
        return any(nonempty(value.get(key)) for key in _CONTENT_KEYS)
    return False


def has_tool_call(value: Any) -> bool:
    if isinstance(value, list):
        return any(has_tool_call(item) for item in value)
    if isinstance(value, dict):
        return value.get("type") in _TOOL_TYPES or bool(value.get("tool_calls"))
    return False


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def ref_of(value: Any) -> tuple[Any, Any]:
    ref = value if isinstance(value, dict) else {}
    return ref.get("type"), ref.get("name")


@dataclass
class Call:
    index: int
    started_at: Any
    model_call_id: Any
    response_id: Any
    model_ref: Any
    status: Any
    response_status: Any
    finish_reason: Any
    error_category: Any
    tokens_in: Any
    tokens_out: Any
    response: Any

    @property
    def failed(self) -> bool:
        status = as_int(self.status)
        return (
            (status is not None and status >= 400)
            or bool(self.error_category)
            or self.response_status in ("failed", "error", "cancelled")
        )

    @property
    def succeeded(self) -> bool:
        status = as_int(self.status)
        return not self.failed and (self.status is None or (status is not None and 200 <= status <= 399))

    @property
    def locator(self) -> dict[str, str]:
        return {"call_id": str(self.model_call_id or self.response_id or self.index)}


def calls_of(trajectory: Mapping[str, Any]) -> list[Call]:
    out = []
    for i, call in enumerate(trajectory.get("model_calls") or ()):
        meta = call.get("response_metadata") or {}
        stats = call.get("token_stats") or {}
        out.append(
            Call(
                i, call.get("started_at"), call.get("model_call_id"), meta.get("response_id"),
                meta.get("model_ref"),
                meta.get("status_code"), meta.get("response_status"), meta.get("finish_reason"),
                meta.get("error_category"), stats.get("prompt_tokens"), stats.get("completion_tokens"),
                call.get("response"),
            )
        )  # fmt: skip
    return out


def ref_key(ref: Mapping[str, Any]) -> str | None:
    if ref.get("model_call_id"):
        return f"call:{ref['model_call_id']}"
    model_ref = ref.get("model_ref")
    if isinstance(model_ref, dict) and ref.get("response_id"):
        return f"response:{model_ref.get('type')}:{model_ref.get('name')}:{ref['response_id']}"
    return None


def unique_refs(refs: list[Any]) -> list[tuple[str, Mapping[str, Any]]]:
    seen: set[tuple[Any, ...]] = set()
    out: list[tuple[str, Mapping[str, Any]]] = []
    for ref in refs:
        if not isinstance(ref, dict) or (key := ref_key(ref)) is None:
            continue
        identity = (ref.get("model_call_id"), *ref_of(ref.get("model_ref")), ref.get("response_id"))
        if identity not in seen:
            seen.add(identity)
            out.append((key, ref))
    return out


@dataclass
class Binding:
    refs: int
    matched: list[Call]
    missing: list[str]
    duplicated: list[tuple[str, int]]

    @property
    def complete(self) -> bool:
        return self.refs > 0 and not self.missing and not self.duplicated


def bind(refs: list[tuple[str, Mapping[str, Any]]], calls: list[Call]) -> Binding:
    matched: dict[int, Call] = {}
    missing: list[str] = []
    duplicated: list[tuple[str, int]] = []
    for key, ref in refs:
        ref_model = ref_of(ref.get("model_ref")) if isinstance(ref.get("model_ref"), dict) else None
        if ref.get("model_call_id"):
            found = [
                c
                for c in calls
                if c.model_call_id == ref["model_call_id"]
                and (
                    ref_model is None or not isinstance(c.model_ref, dict) or ref_of(c.model_ref) == ref_model
                )
                and (
                    not ref.get("response_id") or c.response_id is None or c.response_id == ref["response_id"]
                )
            ]
        else:
            found = [
                c
                for c in calls
                if isinstance(c.model_ref, dict) and ref_of(c.model_ref) == ref_model
                and c.response_id == ref.get("response_id")
            ]  # fmt: skip
        if not found:
            missing.append(key)
        elif len(found) > 1:
            duplicated.append((key, len(found)))
        else:
            matched.setdefault(found[0].index, found[0])
    return Binding(len(refs), [matched[i] for i in sorted(matched)], missing, duplicated)


def speaks(turn: Mapping[str, Any]) -> bool:
    """A non-empty answer or reasoning, or a tool call in the answer."""
    answer = turn.get("answer")
    return nonempty(answer) or nonempty(turn.get("reasoning_content")) or has_tool_call(answer)


def has_content(response: Any) -> bool:
    if not isinstance(response, dict):
        return False
    if any(nonempty(response.get(key)) for key in ("output_text", "content", "output")):
        return True
    choices = response.get("choices")
    return isinstance(choices, list) and any(
        isinstance(c, dict) and (nonempty(c.get("text")) or nonempty((c.get("message") or {}).get("content")))
        for c in choices
    )


def usage_tokens(record: Mapping[str, Any]) -> tuple[int | None, int | None]:
    response = record.get("response")
    usage = response.get("usage") if isinstance(response, dict) else None
    if not isinstance(usage, dict):
        return None, None
    prompt = usage["input_tokens"] if "input_tokens" in usage else usage.get("prompt_tokens")
    completion = usage["output_tokens"] if "output_tokens" in usage else usage.get("completion_tokens")
    prompt, completion = as_int(prompt), as_int(completion)
    return (prompt if prompt is not None and prompt >= 0 else None,
            completion if completion is not None and completion >= 0 else None)  # fmt: skip


def ended_on_failure(calls: list[Call]) -> Call | None:
    """The failed last call of ``calls`` (one model's), or None (check 5's rule)."""
    if not calls or not any(c.failed for c in calls):
        return None
    timed = all(isinstance(c.started_at, int | float) for c in calls)
    if all(c.failed for c in calls):
        return max(calls, key=lambda c: (c.started_at, c.index)) if timed else calls[-1]
    if not timed:
        return None
    last = max(calls, key=lambda c: (c.started_at, c.index))
    return last if last.failed else None
