"""The collector's side of observability: the capture and the trajectory joined onto a rollout row.

Contract (NeMo Gym 0.7.0's collector, docs/reference/health_check.md §1.4), for each completed rollout
when capture is on (:func:`observe_row`):

1. ``ng_model_call_capture`` = ``{rollout_id, metrics: {tokens_in, tokens_out, tokens_reasoning,
   tokens_total, cached_tokens, latency_total_ms, num_calls}, calls: [call record …], gaps?}`` from
   ``<capture dir>/<rollout id>.capture.jsonl`` (:func:`capture_of`; sums are null without a value). Gaps:
   ``model_call_capture_no_records``, ``model_call_capture_records_unreadable`` (``count=N``),
   ``model_call_capture_incomplete`` (the marker exists), ``model_call_capture_unreadable``.
2. ``ng_trajectory`` (:func:`project_trajectory`): the agent's trajectory, when it sent a valid one, with the
   row's identity (``task_id`` = ``task_id`` / ``problem_id`` / ``instance_id``, else ``_ng_task_index``,
   as a string; gap ``producer_trajectory_identity_mismatch`` and re-stamped turns when the agent's ids
   differ; gap ``producer_trajectory_invalid`` when it is not a trajectory), its turns sorted by
   (timestamp, invocation, turn_no), every captured call as a trajectory model call (``duration_ms`` ←
   ``latency_total_ms``, ``response_metadata``, ``token_stats`` of non-negative ints), the capture's gaps,
   and ``model_calls_unavailable`` / ``turns_unavailable`` / ``conversation_unavailable`` when there are no
   calls / turns / conversation; gaps de-duplicated on (code, invocation, detail). Then the request and
   response bodies are dropped from the capture's calls (the trajectory owns them).
3. ``ng_perf`` (:func:`perf_of_trajectory`), when the trajectory has an invocation: ``num_turns``,
   ``num_tool_calls``, ``token_observability_coverage`` (min(1, calls the invocations reference / turns)),
   ``prompt_tokens``, ``cached_prompt_tokens``, ``completion_tokens``, ``reasoning_tokens`` (sums over the
   referenced calls, each omitted when none had it) and ``total_latency_ms``.

With capture off nothing here runs and rows are written as before. :func:`clear_capture` removes a rollout's
earlier capture before it is dispatched (a retried attempt starts from an empty file).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewardgym.observe.capture import CaptureStore, rollout_id_of
from rewardgym.observe.trajectory import gap, task_id_of

TRAJECTORY_KEYS = (
    "schema_version", "task_id", "rollout_id", "invocations", "turns", "model_calls", "tool_calls", "gaps",
)  # fmt: skip
"""The keys of a trajectory record, in its order."""
METADATA_KEYS = (
    "response_id", "model_ref", "model", "dialect", "status_code", "response_status", "finish_reason",
    "upstream_attempted", "response_source", "upstream_status_code", "local_response_reason",
    "error_category", "latency_ttft_ms",
)  # fmt: skip
_PAYLOAD_KEYS = ("request", "response", "request_raw", "response_raw")


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _first(mapping: Any, *keys: str) -> Any:
    if not isinstance(mapping, dict):
        return None
    for key in keys:
        if key in mapping and mapping[key] is not None:
            return mapping[key]
    return None


def call_record(line: Mapping[str, Any], index: int) -> dict[str, Any]:
    """One capture line read back as a call record (docs/reference/health_check.md §1.2)."""
    raw_response, raw_request = line.get("response"), line.get("request")
    response = raw_response if isinstance(raw_response, dict) else {}
    request = raw_request if isinstance(raw_request, dict) else {}
    usage = response.get("usage")
    choices = response.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    found = response.get("incomplete_details")
    details: dict[str, Any] = found if isinstance(found, dict) else {}
    finish = next(
        (
            v
            for v in (response.get("stop_reason"), choice.get("finish_reason"), details.get("reason"))
            if isinstance(v, str)
        ),
        None,
    )
    model = response.get("model") or request.get("model")
    return {
        "model_call_id": line.get("model_call_id"),
        "response_id": response.get("id") if isinstance(response.get("id"), str) else None,
        "client_session_id": line.get("client_session_id"),
        "call_index": index,
        "model_ref": line.get("model_ref"),
        "model": model if isinstance(model, str) else None,
        "dialect": line.get("dialect"),
        "status_code": line.get("status_code"),
        "response_status": response.get("status") if isinstance(response.get("status"), str) else None,
        "finish_reason": finish,
        "started_at": line.get("started_at"),
        "completed_at": line.get("completed_at"),
        "tokens_in": _first(usage, "input_tokens", "prompt_tokens"),
        "tokens_out": _first(usage, "output_tokens", "completion_tokens"),
        "tokens_reasoning": _first(
            _first(usage, "output_tokens_details", "completion_tokens_details"), "reasoning_tokens"
        ),
        "tokens_total": _first(usage, "total_tokens"),
        "request": raw_request if isinstance(raw_request, dict) else None,
        "response": raw_response if isinstance(raw_response, dict) else None,
        "cached_tokens": _first(
            _first(usage, "input_tokens_details", "prompt_tokens_details"), "cached_tokens"
        ),
        "error_category": line.get("error_category"),
        "latency_total_ms": line.get("latency_ms"),
        "latency_ttft_ms": line.get("latency_ttft_ms"),
    }


def capture_of(store: CaptureStore, rollout_id: str) -> dict[str, Any]:
    """The ``ng_model_call_capture`` of one rollout (module doc)."""
    lines, bad, incomplete = store.read(rollout_id)
    gaps: list[dict[str, Any]] = []
    if lines is None:
        gaps.append(gap("model_call_capture_unreadable"))
        lines = []
    elif not lines and not bad:
        gaps.append(gap("model_call_capture_no_records"))
    if bad:
        gaps.append(gap("model_call_capture_records_unreadable", detail=f"count={bad}"))
    if incomplete:
        gaps.append(gap("model_call_capture_incomplete"))
    calls = [call_record(line, i) for i, line in enumerate(lines)]

    def total(key: str) -> Any:
        values = [c[key] for c in calls if isinstance(c[key], int | float) and not isinstance(c[key], bool)]
        return sum(values) if values else None

    summed = ["tokens_in", "tokens_out", "tokens_reasoning", "tokens_total", "cached_tokens"]
    summed.append("latency_total_ms")
    metrics: dict[str, Any] = {key: total(key) for key in summed}
    metrics["num_calls"] = len(calls)
    out: dict[str, Any] = {"rollout_id": rollout_id, "metrics": metrics, "calls": calls}
    if gaps:
        out["gaps"] = gaps
    return out


def _model_call(call: Mapping[str, Any]) -> dict[str, Any]:
    metadata = dict.fromkeys(METADATA_KEYS)
    metadata.update({k: call[k] for k in METADATA_KEYS if call.get(k) is not None})
    response = call.get("response")
    if (
        metadata["response_status"] is None
        and isinstance(response, dict)
        and isinstance(response.get("status"), str)
    ):
        metadata["response_status"] = response["status"]
    return {
        "model_call_id": call.get("model_call_id"),
        "started_at": call.get("started_at"),
        "completed_at": call.get("completed_at"),
        "duration_ms": call.get("latency_total_ms"),
        "request": call.get("request") if call.get("request") is not None else call.get("request_raw"),
        "response": response if response is not None else call.get("response_raw"),
        "response_metadata": metadata,
        "token_stats": {
            "prompt_tokens": _count(call.get("tokens_in")),
            "completion_tokens": _count(call.get("tokens_out")),
            "reasoning_tokens": _count(call.get("tokens_reasoning")),
            "total_tokens": _count(call.get("tokens_total")),
            "cached_tokens": _count(call.get("cached_tokens")),
        },
    }


def _valid_producer(value: Any) -> bool:
    if not isinstance(value, dict) or set(value) - set(TRAJECTORY_KEYS):
        return False
    lists = ("invocations", "turns", "model_calls", "tool_calls", "gaps")
    return all(isinstance(value.get(k, []), list) for k in lists) and all(
        isinstance(item, dict) for k in lists for item in value.get(k, [])
    )


def project_trajectory(row: Mapping[str, Any], result: Mapping[str, Any], rollout_id: str) -> dict[str, Any]:
    """The ``ng_trajectory`` of a result (module doc)."""
    task_id = task_id_of({k: row.get(k) for k in ("task_id", "problem_id", "instance_id", "_ng_task_index")})
    gaps: list[dict[str, Any]] = []
    invocations: list[Any] = []
    turns: list[dict[str, Any]] = []
    tools: list[Any] = []
    calls: list[dict[str, Any]] = []
    producer = result.get("ng_trajectory")
    if producer is not None:
        if _valid_producer(producer):
            mismatched = [
                name
                for name, value in (("task_id", task_id), ("rollout_id", rollout_id))
                if producer.get(name) != value
            ]
            turns = [dict(turn) for turn in producer.get("turns", [])]
            if mismatched:
                gaps.append(gap("producer_trajectory_identity_mismatch", detail=",".join(mismatched)))
                for turn in turns:
                    turn["task_id"], turn["rollout_id"] = task_id, rollout_id
            gaps.extend(producer.get("gaps", []))
            invocations = list(producer.get("invocations", []))
            tools = list(producer.get("tool_calls", []))
            calls = list(producer.get("model_calls", []))
        else:
            gaps.append(gap("producer_trajectory_invalid", detail="ValidationError"))
    turns.sort(key=lambda t: (t.get("timestamp") or 0.0, t.get("invocation_id") or "", t.get("turn_no") or 0))
    capture = result.get("ng_model_call_capture")
    capture = capture if isinstance(capture, dict) else {}
    positions = {c.get("model_call_id"): i for i, c in enumerate(calls) if c.get("model_call_id") is not None}
    for raw in capture.get("calls") or ():
        projected = _model_call(raw)
        at = positions.pop(raw.get("model_call_id"), None) if raw.get("model_call_id") is not None else None
        if at is None:
            calls.append(projected)
        else:
            calls[at] = {**calls[at], **{k: v for k, v in projected.items() if v is not None}}
    gaps.extend(
        g if isinstance(g, dict) else gap("model_call_capture_gap_invalid") for g in capture.get("gaps") or ()
    )
    if not calls:
        gaps.append(gap("model_calls_unavailable"))
    if not turns:
        gaps.append(gap("turns_unavailable"))
    if not any(isinstance(i, dict) and i.get("conversation") for i in invocations):
        gaps.append(gap("conversation_unavailable"))
    unique = {(g.get("code"), g.get("invocation_id"), g.get("detail")): g for g in gaps}
    return {
        "schema_version": "1.0", "task_id": task_id, "rollout_id": rollout_id, "invocations": invocations,
        "turns": turns, "model_calls": calls, "tool_calls": tools, "gaps": list(unique.values()),
    }  # fmt: skip


def perf_of_trajectory(trajectory: Mapping[str, Any], latency_ms: float | None) -> dict[str, Any] | None:
    """The ``ng_perf`` of a projected trajectory (module doc); None without an invocation."""
    invocations = [i for i in trajectory.get("invocations") or () if isinstance(i, dict)]
    if not invocations:
        return None
    by_ref: dict[tuple[Any, ...], dict[str, Any]] = {}
    by_id: dict[Any, dict[str, Any]] = {}
    for call in trajectory.get("model_calls") or ():
        meta = call.get("response_metadata") or {}
        ref = meta.get("model_ref") or {}
        by_ref.setdefault((ref.get("type"), ref.get("name"), meta.get("response_id")), call)
        if call.get("model_call_id") is not None:
            by_id[call["model_call_id"]] = call
    turns_of: dict[Any, int] = {}
    for turn in trajectory.get("turns") or ():
        turns_of[turn.get("invocation_id")] = turns_of.get(turn.get("invocation_id"), 0) + 1
    num_turns = 0
    owned: list[dict[str, Any]] = []
    for invocation in invocations:
        matched: list[dict[str, Any]] = []
        for ref in invocation.get("model_calls") or ():
            model_ref = ref.get("model_ref") or {}
            found = by_id.get(ref.get("model_call_id")) or by_ref.get(
                (model_ref.get("type"), model_ref.get("name"), ref.get("response_id"))
            )
            if found is not None and all(found is not seen for seen in matched):
                matched.append(found)
        owned.extend(matched)
        num_turns += (
            turns_of.get(invocation.get("invocation_id")) or len(invocation.get("model_calls") or ()) or 1
        )
    perf: dict[str, Any] = {
        "num_turns": num_turns,
        "num_tool_calls": len(trajectory.get("tool_calls") or ()),
        "token_observability_coverage": min(1.0, len(owned) / num_turns) if num_turns else 0.0,
    }
    for key, stat in (
        ("prompt_tokens", "prompt_tokens"), ("cached_prompt_tokens", "cached_tokens"),
        ("completion_tokens", "completion_tokens"), ("reasoning_tokens", "reasoning_tokens"),
    ):  # fmt: skip
        values = [c["token_stats"][stat] for c in owned if (c.get("token_stats") or {}).get(stat) is not None]
        if values:
            perf[key] = sum(values)
    if latency_ms is not None:
        perf["total_latency_ms"] = latency_ms
    return perf


def observe_row(
    store: CaptureStore, row: Mapping[str, Any], result: dict[str, Any], latency_ms: float | None
) -> None:
    """Add ``ng_model_call_capture``, ``ng_trajectory`` and ``ng_perf`` to ``result`` (module doc)."""
    rollout_id = rollout_id_of(row) or f"{row.get('_ng_task_index')}-{row.get('_ng_rollout_index')}"
    result["ng_model_call_capture"] = capture_of(store, rollout_id)
    trajectory = project_trajectory(row, result, rollout_id)
    result["ng_trajectory"] = trajectory
    for call in result["ng_model_call_capture"]["calls"]:
        for key in _PAYLOAD_KEYS:
            call.pop(key, None)
    perf = perf_of_trajectory(trajectory, latency_ms)
    if perf is not None:
        result["ng_perf"] = perf
    else:
        result.pop("ng_perf", None)


def clear_capture(store: CaptureStore, row: Mapping[str, Any]) -> None:
    """Remove the capture file and marker of ``row``'s rollout id (before it is dispatched)."""
    try:
        rollout_id = rollout_id_of(row)
    except ValueError:
        return
    if rollout_id is not None:
        for path in (store.path(rollout_id), store.marker(rollout_id)):
            path.unlink(missing_ok=True)
