"""NeMo Gym 0.7.0's trajectory checks on one rollout record (pure; docs/reference/health_check.md §2.1–2.3).

Contract of :func:`evaluate` (a parsed rollout line → :class:`RecordChecks`):

* no ``ng_trajectory``: every check of :data:`TRAJECTORY_CHECKS` is unobserved (not an error);
* a trajectory that is not a valid ``TrajectoryRecord`` (:func:`trajectory_error`: unknown or missing keys,
  wrong types, duplicate ids, a turn of another task or rollout): a ``record_unreadable`` finding
  (``canonical trajectory is unreadable``, error ``ValidationError``) and every check unobserved;
* otherwise the evidence flags (``trajectory_observed``, ``turns_observed``, ``turn_call_scope_complete``,
  ``model_calls_observed``, from the gap codes), the normalised calls, the references and the two binding
  views (turn-bound and invocation-owned), and the nine checks in NeMo Gym's registry order, each either
  unobserved by the gating of docs/reference/health_check.md §2.2 or evaluated, with its findings
  (``{check, locator?, detail}``).

``ignored`` checks neither run nor appear in ``unobserved``. :attr:`RecordChecks.turn_success` and
:attr:`RecordChecks.policy_calls_observed` feed the task check ``task_no_successful_model_calls``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from rewardgym.analysis.trajectory_calls import (
    Binding,
    Call,
    as_int,
    bind,
    calls_of,
    ended_on_failure,
    has_content,
    ref_key,
    ref_of,
    speaks,
    unique_refs,
    usage_tokens,
)
from rewardgym.analysis.trajectory_schema import trajectory_error

TRAJECTORY_CHECKS = (
    "rollout_missing_agent_turns",
    "rollout_ended_on_failed_model_call",
    "agent_turn_hollow",
    "model_call_zero_completion_tokens",
    "model_call_missing_token_counts",
    "trajectory_capture_mismatch",
    "model_call_failed",
    "rollout_token_count_mismatch",
    "model_call_runaway_generation",
)
"""NeMo Gym's rollout checks that read the trajectory, in its registry order."""

_UNSEEN_CALLS = {
    "model_calls_unavailable", "model_call_capture_incomplete", "model_call_capture_records_unreadable",
    "model_call_capture_unreadable",
}  # fmt: skip
_LENGTH = {"length", "max_output_tokens", "max_tokens"}
_REFERENCE_GAPS = {
    "model_call_reference_unmatched": "missing_captured_call",
    "model_call_reference_ambiguous": "duplicated_captured_call",
    "model_call_reference_conflict": "conflicting_call_ownership",
}


@dataclass
class RecordChecks:
    """What the trajectory checks found on one record."""

    findings: list[dict[str, Any]] = field(default_factory=list)
    unobserved: list[str] = field(default_factory=list)
    has_trajectory: bool = False
    rollout_id: str | None = None
    """``_ng_rollout_id``, else the trajectory's ``rollout_id`` (NeMo Gym's verdict-row id); None: neither."""
    policy_calls_observed: bool = False
    turn_success: int = 0
    """Successful turn-bound calls."""
    calls: int = 0
    failed_calls: int = 0
    ended_on_error: bool = False
    errors_by_status: dict[str, int] = field(default_factory=dict)
    duplicated: int = 0
    capture_prompt: int = 0
    capture_completion: int = 0


def evaluate(record: Mapping[str, Any], ignored: Collection[str] = ()) -> RecordChecks:
    """The trajectory checks of one record (module doc)."""
    out = RecordChecks()
    active = [c for c in TRAJECTORY_CHECKS if c not in ignored]
    trajectory = record.get("ng_trajectory")
    named = record.get("_ng_rollout_id")
    if named is None and isinstance(trajectory, dict):
        named = trajectory.get("rollout_id")
    out.rollout_id = None if named is None else str(named)
    if trajectory is None:
        out.unobserved = active
        return out
    error = trajectory_error(trajectory)
    if error is not None:
        if "record_unreadable" not in ignored:
            out.findings.append(
                {
                    "check": "record_unreadable",
                    "detail": {"reason": "canonical trajectory is unreadable", "error": error},
                }
            )
        out.unobserved = active
        return out
    out.has_trajectory = True
    codes = {g.get("code") for g in trajectory.get("gaps") or ()}
    observed = "trajectory_projection_failed" not in codes
    turns_seen = observed and "turns_unavailable" not in codes
    scope = observed and "turn_model_call_scope_incomplete" not in codes
    calls_seen = observed and not (codes & _UNSEEN_CALLS)
    calls = calls_of(trajectory)
    turns = trajectory.get("turns") or []
    turn_refs = unique_refs([r for t in turns for r in t.get("model_calls") or ()])
    owned_refs = unique_refs(
        [r for _, r in turn_refs]
        + [r for i in trajectory.get("invocations") or () for r in i.get("model_calls") or ()]
    )
    turn_view, owned = bind(turn_refs, calls), bind(owned_refs, calls)
    out.policy_calls_observed = scope and turn_view.complete
    out.turn_success = sum(1 for c in turn_view.matched if c.succeeded)
    _statistics(out, calls)
    reference_gaps = [g for g in trajectory.get("gaps") or () if g.get("code") in _REFERENCE_GAPS]
    prompt, completion = usage_tokens(record)

    def gated(check: str) -> bool:
        """True when ``check`` is unobserved by the gating (docs/reference/health_check.md §2.2)."""
        if check in ("rollout_missing_agent_turns", "agent_turn_hollow"):
            return not turns_seen
        if check == "rollout_ended_on_failed_model_call":
            return not calls_seen or not calls
        if not calls_seen:
            return True
        if check == "trajectory_capture_mismatch":
            return not owned_refs and not reference_gaps
        if check == "rollout_token_count_mismatch":
            return not (
                scope and turn_view.complete and turn_view.matched
                and prompt is not None and completion is not None
                and all(c.tokens_in is not None and c.tokens_out is not None for c in turn_view.matched)
            )  # fmt: skip
        if not owned.matched:
            return True
        if check == "model_call_runaway_generation":
            return any(c.finish_reason in _LENGTH and c.response is None for c in owned.matched)
        return False

    for check in active:
        if gated(check):
            out.unobserved.append(check)
            continue
        out.findings.extend(
            _findings(check, turns, calls, owned, turn_view, reference_gaps, prompt, completion)
        )
    return out


def _statistics(out: RecordChecks, calls: list[Call]) -> None:
    out.calls = len(calls)
    for c in calls:
        if c.failed:
            out.failed_calls += 1
            key = str(c.status) if c.status is not None else "unknown"
            out.errors_by_status[key] = out.errors_by_status.get(key, 0) + 1
        out.capture_prompt += as_int(c.tokens_in) or 0
        out.capture_completion += as_int(c.tokens_out) or 0
    out.ended_on_error = ended_on_failure(calls) is not None
    identities: dict[str, int] = {}
    for c in calls:
        ref = c.model_ref if isinstance(c.model_ref, dict) else None
        if c.model_call_id:
            key = f"call:{c.model_call_id}"
        elif ref is not None and c.response_id:
            key = f"response:{ref.get('type')}:{ref.get('name')}:{c.response_id}"
        elif c.response_id:
            key = f"response::{c.response_id}"
        else:
            continue
        identities[key] = identities.get(key, 0) + 1
    out.duplicated = sum(n - 1 for n in identities.values())


def _findings(
    check: str,
    turns: list[Any],
    calls: list[Call],
    owned: Binding,
    turn_view: Binding,
    reference_gaps: list[Mapping[str, Any]],
    prompt: int | None,
    completion: int | None,
) -> list[dict[str, Any]]:
    if check == "rollout_missing_agent_turns":
        active = any(
            speaks(t) or any(isinstance(r, dict) and ref_key(r) for r in t.get("model_calls") or ())
            for t in turns
        )  # fmt: skip
        return [] if active else [{"check": check, "detail": {"reason": "no agent turn with model activity"}}]
    if check == "agent_turn_hollow":
        return [
            {"check": check, "locator": {"turn": t.get("turn_no")},
             "detail": {"reason": "agent turn has no message or tool calls"}}
            for t in turns
            if not speaks(t)
        ]  # fmt: skip
    if check == "rollout_ended_on_failed_model_call":
        groups: dict[Any, list[Call]] = {}
        for c in calls:
            groups.setdefault(ref_of(c.model_ref) if isinstance(c.model_ref, dict) else None, []).append(c)
        found = []
        for key, members in groups.items():
            last = ended_on_failure(members)
            if last is not None:
                detail = {
                    "model_ref": None if key is None else f"{key[0]}/{key[1]}", "status": last.status,
                    "error_category": last.error_category, "observed_calls": len(members),
                    "successful_calls": sum(1 for c in members if c.succeeded),
                }  # fmt: skip
                found.append({"check": check, "locator": last.locator, "detail": detail})
        return found
    if check == "model_call_zero_completion_tokens":
        return [
            {"check": check, "locator": c.locator, "detail": {"completion_tokens": 0}}
            for c in owned.matched
            if as_int(c.tokens_out) == 0
        ]
    if check == "model_call_missing_token_counts":
        found = []
        for c in owned.matched:
            missing = [
                n
                for n, v in (("prompt_tokens", c.tokens_in), ("completion_tokens", c.tokens_out))
                if v is None
            ]
            if missing:
                found.append({"check": check, "locator": c.locator, "detail": {"missing": missing}})
        return found
    if check == "trajectory_capture_mismatch":
        items: list[tuple[str, str, dict[str, Any]]] = []
        items += [
            ("missing_captured_call", k.rsplit(":", 1)[-1], {"kind": "missing_captured_call"})
            for k in owned.missing
        ]
        items += [
            (
                "duplicated_captured_call",
                k.rsplit(":", 1)[-1],
                {"kind": "duplicated_captured_call", "count": n},
            )
            for k, n in owned.duplicated
        ]
        for g in reference_gaps:
            kind = _REFERENCE_GAPS[g["code"]]
            call_id = str(g["detail"]).rsplit(":", 1)[-1] if g.get("detail") is not None else "unknown"
            items.append(
                (
                    kind,
                    call_id,
                    {"kind": kind, "observation_gap": g["code"], "invocation_id": g.get("invocation_id")},
                )
            )
        seen: set[tuple[str, str]] = set()
        found = []
        for kind, call_id, detail in items:
            if (kind, call_id) not in seen:
                seen.add((kind, call_id))
                found.append({"check": check, "locator": {"call_id": call_id}, "detail": detail})
        return found
    if check == "model_call_failed":
        final = max(c.index for c in owned.matched)
        return [
            {"check": check, "locator": c.locator,
             "detail": {"status": c.status, "error_category": c.error_category,
                        "terminal": owned.complete and c.index == final}}
            for c in owned.matched
            if c.failed
        ]  # fmt: skip
    if check == "rollout_token_count_mismatch":
        capture_prompt = sum(c.tokens_in for c in turn_view.matched)
        capture_completion = sum(c.tokens_out for c in turn_view.matched)
        if (capture_prompt, capture_completion) == (prompt, completion):
            return []
        detail = {
            "transcript_prompt": prompt, "transcript_completion": completion,
            "capture_prompt": capture_prompt, "capture_completion": capture_completion,
        }  # fmt: skip
        return [{"check": check, "detail": detail}]
    # model_call_runaway_generation
    return [
        {"check": check, "locator": c.locator, "detail": {"finish_reason": c.finish_reason}}
        for c in owned.matched
        if c.finish_reason in _LENGTH and not has_content(c.response)
    ]
