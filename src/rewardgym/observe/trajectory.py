"""The agent's side of observability: the ``ng_trajectory`` record of one episode.

Contract (NeMo Gym 0.7.0's ``simple_agent``, docs/reference/health_check.md §1.3 and §1.5): a
:class:`TrajectoryRecorder` collects, for the invocation ``root``,

* one turn per model call — ``turn_no`` (step, from 1), ``timestamp`` (just before the call), ``question``
  (the whole input sent), ``answer`` (the output items that are not reasoning), ``reasoning_content`` (the
  reasoning items, or null), ``step_count`` (tools run so far, updated once the turn's tools ran) and the
  call reference ``{model_call_id: null, model_ref, response_id}``; a response without an id gives the gap
  ``model_call_reference_unavailable`` (detail ``turn:<n>``) instead of a reference;
* one tool call per function call run, ``timing_source: "executor"``, status ``completed`` or ``failed``
  (``error_type`` the exception name or ``http_<status>``), with its output;
* the invocation's status: ``incomplete`` when the response was incomplete or ``max_steps`` ended the loop.

:meth:`TrajectoryRecorder.record` returns the record — keys in the schema's order, every field written,
nulls included, ``model_calls`` empty (the collector fills them from the capture) — with the row's
``task_id`` (``task_id`` / ``problem_id`` / ``instance_id`` / ``_ng_task_index``, else ``"unknown"``), and
the verifier's boolean ``resolved`` on the last turn (else the gap ``resolution_unavailable``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

INVOCATION = "root"


def gap(code: str, invocation_id: str | None = None, detail: str | None = None) -> dict[str, Any]:
    return {"code": code, "invocation_id": invocation_id, "detail": detail}


def task_id_of(row: Mapping[str, Any]) -> str:
    for key in ("task_id", "problem_id", "instance_id", "_ng_task_index"):
        if row.get(key) is not None:
            return str(row[key])
    return "unknown"


class TrajectoryRecorder:
    """The turns, tool calls and gaps of one episode (module doc)."""

    def __init__(self, model_server: str) -> None:
        self.model_ref = {"type": "responses_api_models", "name": model_server}
        self.turns: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []
        self.refs: list[dict[str, Any]] = []
        self.gaps: list[dict[str, Any]] = []
        self.status = "completed"

    def turn(self, timestamp: float, question: list[Any], response: Mapping[str, Any]) -> None:
        """Record the model call of the next step."""
        step = len(self.turns) + 1
        output = response.get("output") or []
        refs: list[dict[str, Any]] = []
        response_id = response.get("id")
        if response_id:
            ref = {"model_call_id": None, "model_ref": dict(self.model_ref), "response_id": response_id}
            self.refs.append(ref)
            refs.append(ref)
        else:
            self.gaps.append(gap("model_call_reference_unavailable", INVOCATION, f"turn:{step}"))
        reasoning = [item for item in output if isinstance(item, dict) and item.get("type") == "reasoning"]
        self.turns.append(
            {
                "invocation_id": INVOCATION, "task_id": "unscoped", "rollout_id": "unscoped", "turn_no": step,
                "timestamp": timestamp, "question": question,
                "answer": [item for item in output if not any(item is r for r in reasoning)],
                "reasoning_content": reasoning or None, "resolved": None, "step_count": len(self.tools),
                "model_calls": refs,
            }
        )  # fmt: skip

    def tool(
        self,
        call: Mapping[str, Any],
        started: float,
        completed: float,
        ms: float,
        error: str | None,
        output: str,
    ) -> None:
        """Record one tool the agent ran (``error``: the error type, None when it completed)."""
        self.tools.append(
            {
                "kind": "tool_call", "invocation_id": INVOCATION, "tool_call_id": call.get("call_id"),
                "sandbox_id": None, "tool_name": call.get("name"), "started_at": started,
                "completed_at": max(started, completed), "duration_ms": ms, "timing_source": "executor",
                "status": "failed" if error else "completed", "error_type": error, "output": output,
            }
        )  # fmt: skip
        self.turns[-1]["step_count"] = len(self.tools)

    def record(
        self, row: Mapping[str, Any], rollout_id: str, conversation: list[Any], resolved: Any
    ) -> dict[str, Any]:
        """The ``ng_trajectory`` of the episode (module doc)."""
        task_id = task_id_of(row)
        for turn in self.turns:
            turn["task_id"], turn["rollout_id"] = task_id, rollout_id
        gaps = list(self.gaps)
        if isinstance(resolved, bool) and self.turns:
            self.turns[-1]["resolved"] = resolved
        else:
            gaps.append(gap("resolution_unavailable", INVOCATION))
        invocation = {
            "kind": "agent_invocation", "invocation_id": INVOCATION, "parent_invocation_id": None,
            "spawned_by_tool_call_id": None, "status": self.status, "duration_ms": None, "error_type": None,
            "model_calls": self.refs, "conversation": conversation,
        }  # fmt: skip
        return {
            "schema_version": "1.0", "task_id": task_id, "rollout_id": rollout_id,
            "invocations": [invocation], "turns": self.turns, "model_calls": [], "tool_calls": self.tools,
            "gaps": gaps,
        }  # fmt: skip
