"""Rollouts as ATIF trajectories (the Agent Trajectory Interchange Format, ``ATIF-v1.4``: Harbor's RFC 0001)
and back: ``gym eval export --format atif`` and ``gym eval reverify --rollouts <atif file>``.

Contract:

* :func:`trajectory_of` turns one rollout row into one trajectory: ``schema_version``, ``session_id``
  (``"<task>-<rollout>"``), ``agent`` ``{name: agent_ref.name, version: rewardgym's, model_name:
  response.model}``, ``steps`` and ``final_metrics`` ``{total_prompt_tokens, total_completion_tokens,
  total_steps}`` (token totals only when ``response.usage`` has them), ``extra.rewardgym`` ``{_ng_task_index,
  _ng_rollout_index, reward}``. Steps, numbered from 1: the request's ``input`` messages (a string input is
  one user message; ``system`` / ``developer`` → source ``system``, ``user`` → ``user``, ``assistant`` →
  ``agent``), each marked ``is_copied_context: true``; then the response's ``output``: an assistant message
  starts an agent step (``message`` = its text, ``reasoning_content`` = the reasoning summaries before it),
  ``function_call`` items become the agent step's ``tool_calls`` ``{tool_call_id, function_name,
  arguments}`` (a call with no message before it gets an agent step with an empty message), each
  ``function_call_output`` an ``observation.results`` entry ``{source_call_id, content}`` of the step that
  made the call. Other item types are left out (ATIF has no place for them).
* :func:`response_of` rebuilds what a verifier reads from a trajectory: ``output`` items from the agent steps
  that are not copied context (reasoning, message, function calls, then their outputs, step by step),
  ``usage`` from ``final_metrics``, ``model`` from ``agent.model_name``, ``id`` ``resp_atif_<session_id>`` and
  ``created_at`` 0 (ATIF keeps neither); :func:`key_of_trajectory` its (task, rollout) from
  ``extra.rewardgym``. Ids, statuses and item fields ATIF does not carry are not restored.
* :func:`is_trajectory` tells a trajectory line from a rollout row (``schema_version`` starting ``ATIF-``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import rewardgym
from rewardgym.errors import DataError
from rewardgym.protocol import keys

SCHEMA_VERSION: Final = "ATIF-v1.4"
_SOURCES: Final = {"system": "system", "developer": "system", "user": "user", "assistant": "agent"}


def is_trajectory(row: Mapping[str, Any]) -> bool:
    return str(row.get("schema_version", "")).startswith("ATIF-")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) for part in content if isinstance(part, Mapping) and "text" in part
        )
    return ""


def _input_steps(params: Any) -> list[dict[str, Any]]:
    given = params.get("input") if isinstance(params, Mapping) else None
    messages = [{"role": "user", "content": given}] if isinstance(given, str) else given or []
    steps = []
    for item in messages:
        if (
            isinstance(item, Mapping)
            and item.get("role") in _SOURCES
            and item.get("type", "message") == "message"
        ):
            steps.append(
                {
                    "source": _SOURCES[str(item["role"])],
                    "message": _text(item.get("content")),
                    "is_copied_context": True,
                }
            )
    return steps


def _output_steps(output: Any) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    reasoning: list[str] = []
    by_call: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for item in output if isinstance(output, list) else []:
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind == "reasoning":
            reasoning.append(_text(item.get("summary")) or _text(item.get("content")))
        elif kind == "message" and item.get("role", "assistant") == "assistant":
            current = {"source": "agent", "message": _text(item.get("content"))}
            if reasoning:
                current["reasoning_content"], reasoning = "\n".join(reasoning), []
            steps.append(current)
        elif kind == "function_call":
            if current is None or "observation" in current:
                current = {"source": "agent", "message": ""}
                if reasoning:
                    current["reasoning_content"], reasoning = "\n".join(reasoning), []
                steps.append(current)
            call = {
                "tool_call_id": str(item.get("call_id", "")),
                "function_name": str(item.get("name", "")),
                "arguments": item.get("arguments", ""),
            }
            current.setdefault("tool_calls", []).append(call)
            by_call[call["tool_call_id"]] = current
        elif kind == "function_call_output":
            owner = by_call.get(str(item.get("call_id", ""))) or current
            if owner is not None:
                results = owner.setdefault("observation", {"results": []})["results"]
                results.append(
                    {"source_call_id": str(item.get("call_id", "")), "content": item.get("output")}
                )
    return steps


def trajectory_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """One rollout row as one ATIF trajectory (module docstring)."""
    found = row.get(keys.RESPONSE)
    response: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    ref = row.get(keys.AGENT_REF)
    steps = _input_steps(row.get(keys.RESPONSES_CREATE_PARAMS)) + _output_steps(response.get("output"))
    numbered = [{"step_id": number, **step} for number, step in enumerate(steps, start=1)]
    metrics: dict[str, Any] = {}
    usage = response.get("usage")
    if isinstance(usage, Mapping):
        for ours, theirs in (
            ("total_prompt_tokens", "input_tokens"),
            ("total_completion_tokens", "output_tokens"),
        ):
            if isinstance(usage.get(theirs), int):
                metrics[ours] = usage[theirs]
    metrics["total_steps"] = len(numbered)
    task, rollout = row.get(keys.TASK_INDEX), row.get(keys.ROLLOUT_INDEX)
    return {
        "schema_version": SCHEMA_VERSION,
        "session_id": f"{task}-{rollout}",
        "agent": {
            "name": str(ref.get("name")) if isinstance(ref, Mapping) else "agent",
            "version": rewardgym.__version__,
            "model_name": response.get("model"),
        },
        "steps": numbered,
        "final_metrics": metrics,
        "extra": {
            "rewardgym": {
                keys.TASK_INDEX: task,
                keys.ROLLOUT_INDEX: rollout,
                keys.REWARD: row.get(keys.REWARD),
            }
        },
    }


def key_of_trajectory(trajectory: Mapping[str, Any], where: str) -> tuple[int, int]:
    extra = trajectory.get("extra")
    ours = extra.get("rewardgym") if isinstance(extra, Mapping) else None
    task = ours.get(keys.TASK_INDEX) if isinstance(ours, Mapping) else None
    rollout = ours.get(keys.ROLLOUT_INDEX) if isinstance(ours, Mapping) else None
    if not (isinstance(task, int) and isinstance(rollout, int)):
        raise DataError(
            f"{where}: ATIF trajectory without extra.rewardgym._ng_task_index / _ng_rollout_index"
        )
    return task, rollout


def response_of(trajectory: Mapping[str, Any]) -> dict[str, Any]:
    """What a verifier reads of the episode, rebuilt from a trajectory (module docstring)."""
    output: list[dict[str, Any]] = []
    steps = trajectory.get("steps")
    for step in steps if isinstance(steps, list) else []:
        if not isinstance(step, Mapping) or step.get("source") != "agent" or step.get("is_copied_context"):
            continue
        if step.get("reasoning_content"):
            summary = [{"type": "summary_text", "text": str(step["reasoning_content"])}]
            output.append({"type": "reasoning", "summary": summary})
        if step.get("message"):
            content = [{"type": "output_text", "text": _text(step["message"]), "annotations": []}]
            output.append({"type": "message", "role": "assistant", "status": "completed", "content": content})
        for call in step.get("tool_calls") or []:
            output.append(
                {"type": "function_call", "call_id": call.get("tool_call_id"),
                 "name": call.get("function_name"), "arguments": call.get("arguments")}
            )  # fmt: skip
        observation = step.get("observation")
        for result in observation.get("results") or [] if isinstance(observation, Mapping) else []:
            output.append(
                {
                    "type": "function_call_output",
                    "call_id": result.get("source_call_id"),
                    "output": result.get("content"),
                }
            )
    metrics = trajectory.get("final_metrics")
    usage = {}
    if isinstance(metrics, Mapping):
        for ours, theirs in (
            ("input_tokens", "total_prompt_tokens"),
            ("output_tokens", "total_completion_tokens"),
        ):
            if isinstance(metrics.get(theirs), int):
                usage[ours] = metrics[theirs]
    agent = trajectory.get("agent")
    model = agent.get("model_name") if isinstance(agent, Mapping) else None
    response: dict[str, Any] = {
        "id": f"resp_atif_{trajectory.get('session_id', '')}",
        "created_at": 0.0,
        "model": model if isinstance(model, str) else "",
        "object": "response",
        "output": output,
    }
    if usage:
        response["usage"] = usage
    return response
