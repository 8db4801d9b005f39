"""Is an ``ng_trajectory`` a valid NeMo Gym 0.7.0 ``TrajectoryRecord``? (pure; docs/reference/health_check.md
§1.5).

Contract: :func:`trajectory_error` returns None for a valid record, else the error class NeMo Gym's health
check names for it (``ValidationError``). Valid means: every object has only its schema's keys (extra keys
are an error, as 0.7.0's models forbid them), the required ones (record: ``task_id``, ``rollout_id``; turn:
``invocation_id``, ``task_id``, ``rollout_id``, ``turn_no`` ≥ 1, ``timestamp``, ``step_count`` ≥ 0;
invocation: ``invocation_id``; tool call: ``invocation_id``, ``tool_call_id``; gap: ``code``) with their
types, enumerations (``schema_version`` "1.0", statuses, ``timing_source``), non-negative durations and
token counts, call references that carry ``model_call_id`` or both ``model_ref`` and ``response_id``, a tool
call that does not end before it starts; and no duplicate invocation id, no duplicate non-null model call
id, no turn of another task or rollout, no duplicate (invocation, turn_no).
"""

from __future__ import annotations

from typing import Any

from rewardgym.observe.projection import METADATA_KEYS, TRAJECTORY_KEYS

_RECORD = set(TRAJECTORY_KEYS)
_INVOCATION = {
    "kind", "invocation_id", "parent_invocation_id", "spawned_by_tool_call_id", "status", "duration_ms",
    "error_type", "model_calls", "conversation",
}  # fmt: skip
_TURN = {
    "invocation_id", "task_id", "rollout_id", "turn_no", "timestamp", "question", "answer",
    "reasoning_content", "resolved", "step_count", "model_calls",
}  # fmt: skip
_REF = {"model_call_id", "model_ref", "response_id"}
_CALL = {
    "model_call_id", "started_at", "completed_at", "duration_ms", "request", "response", "response_metadata",
    "token_stats",
}  # fmt: skip
_METADATA = set(METADATA_KEYS)
_STATS = {"prompt_tokens", "completion_tokens", "reasoning_tokens", "total_tokens", "cached_tokens"}
_TOOL = {
    "kind", "invocation_id", "tool_call_id", "sandbox_id", "tool_name", "started_at", "completed_at",
    "duration_ms", "timing_source", "status", "error_type", "output",
}  # fmt: skip
_GAP = {"code", "invocation_id", "detail"}
_INVOCATION_STATUS = {"completed", "failed", "incomplete", "unknown"}
_TOOL_STATUS = {"completed", "failed", "timeout", "cancelled", "incomplete", "unknown"}


class _Invalid(Exception):
    pass


def _need(ok: bool) -> None:
    if not ok:
        raise _Invalid


def _obj(value: Any, keys: set[str], required: tuple[str, ...] = ()) -> dict[str, Any]:
    _need(isinstance(value, dict) and set(value) <= keys and all(k in value for k in required))
    return value  # type: ignore[no-any-return]


def _str(value: Any, optional: bool = True) -> None:
    _need(isinstance(value, str) or (optional and value is None))


def _num(value: Any, low: float | None = None) -> None:
    if value is None:
        return
    _need(isinstance(value, int | float) and not isinstance(value, bool))
    _need(low is None or value >= low)


def _count(value: Any, low: int = 0) -> None:
    if value is None:
        return
    _need(isinstance(value, int) and not isinstance(value, bool) and value >= low)


def _list(record: dict[str, Any], key: str) -> list[Any]:
    value = record.get(key, [])
    _need(isinstance(value, list))
    return value  # type: ignore[no-any-return]


def _model_ref(value: Any) -> None:
    if value is None:
        return
    ref = _obj(value, {"type", "name"}, ("type", "name"))
    _need(ref["type"] == "responses_api_models" and isinstance(ref["name"], str))


def _refs(values: Any) -> None:
    _need(isinstance(values, list))
    for value in values:
        ref = _obj(value, _REF)
        _str(ref.get("model_call_id"))
        _str(ref.get("response_id"))
        _model_ref(ref.get("model_ref"))
        _need(
            bool(ref.get("model_call_id"))
            or (ref.get("model_ref") is not None and bool(ref.get("response_id")))
        )


def _check(record: Any) -> None:
    record = _obj(record, _RECORD, ("task_id", "rollout_id"))
    _need(record.get("schema_version", "1.0") == "1.0")
    _str(record["task_id"], optional=False)
    _str(record["rollout_id"], optional=False)
    invocation_ids: set[str] = set()
    for value in _list(record, "invocations"):
        invocation = _obj(value, _INVOCATION, ("invocation_id",))
        _need(invocation.get("kind", "agent_invocation") == "agent_invocation")
        _str(invocation["invocation_id"], optional=False)
        _need(invocation["invocation_id"] not in invocation_ids)
        invocation_ids.add(invocation["invocation_id"])
        for key in ("parent_invocation_id", "spawned_by_tool_call_id", "error_type"):
            _str(invocation.get(key))
        _need(invocation.get("status", "unknown") in _INVOCATION_STATUS)
        _num(invocation.get("duration_ms"), 0)
        _refs(invocation.get("model_calls", []))
        conversation = invocation.get("conversation", [])
        _need(isinstance(conversation, list) and all(isinstance(item, dict) for item in conversation))
    turn_keys: set[tuple[str, int]] = set()
    for value in _list(record, "turns"):
        turn = _obj(
            value, _TURN, ("invocation_id", "task_id", "rollout_id", "turn_no", "timestamp", "step_count")
        )
        for key in ("invocation_id", "task_id", "rollout_id"):
            _str(turn[key], optional=False)
        _need(turn["task_id"] == record["task_id"] and turn["rollout_id"] == record["rollout_id"])
        _count(turn["turn_no"], 1)
        _need(
            turn["turn_no"] is not None and turn["step_count"] is not None and turn["timestamp"] is not None
        )
        _num(turn["timestamp"])
        _count(turn["step_count"])
        _need(turn.get("resolved") is None or isinstance(turn["resolved"], bool))
        _refs(turn.get("model_calls", []))
        _need((turn["invocation_id"], turn["turn_no"]) not in turn_keys)
        turn_keys.add((turn["invocation_id"], turn["turn_no"]))
    call_ids: set[str] = set()
    for value in _list(record, "model_calls"):
        call = _obj(value, _CALL)
        _str(call.get("model_call_id"))
        if call.get("model_call_id") is not None:
            _need(call["model_call_id"] not in call_ids)
            call_ids.add(call["model_call_id"])
        _num(call.get("started_at"))
        _num(call.get("completed_at"))
        _num(call.get("duration_ms"), 0)
        meta = _obj(call.get("response_metadata", {}), _METADATA)
        _model_ref(meta.get("model_ref"))
        for key in ("response_id", "model", "dialect", "response_status", "finish_reason", "error_category"):
            _str(meta.get(key))
        _need(meta.get("response_source") in (None, "upstream", "local"))
        _count(meta.get("status_code"), -(2**63))
        _num(meta.get("latency_ttft_ms"), 0)
        stats = _obj(call.get("token_stats", {}), _STATS)
        for key in _STATS:
            _count(stats.get(key))
    for value in _list(record, "tool_calls"):
        tool = _obj(value, _TOOL, ("invocation_id", "tool_call_id"))
        _need(tool.get("kind", "tool_call") == "tool_call")
        _str(tool["invocation_id"], optional=False)
        _str(tool["tool_call_id"], optional=False)
        _need(tool.get("status", "unknown") in _TOOL_STATUS)
        _need(tool.get("timing_source") in (None, "executor", "artifact", "harness"))
        _num(tool.get("started_at"))
        _num(tool.get("completed_at"))
        _num(tool.get("duration_ms"), 0)
        started, completed = tool.get("started_at"), tool.get("completed_at")
        _need(started is None or completed is None or completed >= started)
    for value in _list(record, "gaps"):
        found = _obj(value, _GAP, ("code",))
        _str(found["code"], optional=False)
        _str(found.get("invocation_id"))
        _str(found.get("detail"))


def trajectory_error(trajectory: Any) -> str | None:
    """None when ``trajectory`` is a valid record, else ``"ValidationError"`` (module doc)."""
    try:
        _check(trajectory)
    except _Invalid:
        return "ValidationError"
    return None
