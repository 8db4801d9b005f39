"""The fields NeMo Gym 0.7.0 adds to every rollout row, computed for rewardgym's collections
(docs/reference/contract.md §4.9).

Contract:

* ``_ng_environment_server``: the name of the environment server that ran the rollout. rewardgym has no
  environment servers; NeMo Gym 0.7.0 fronts each agent that has none with a generated ``legacy_agent``
  relay, and that relay's name is what its collector writes for the same stack.
  :func:`environment_server_names` derives it by the same rule: the agent's name without its
  ``_<agent type>`` suffix (else without ``_agent``), plus ``_environment_server``
  (``mcqa_simple_agent`` of type ``simple_agent`` → ``mcqa_environment_server``). When that name is
  already an instance name or another agent's relay, it is the whole agent name plus the suffix, extended
  until it is free. Agents are named in sorted order. On a NeMo Gym stack the relay its head's config
  document names in front of the agent (``environment_servers.legacy_agent.agent_server``) is used
  instead (:func:`relay_names`), whatever its name.
* ``_ng_result_type``: the environment server's type, always ``legacy_agent`` here.
* ``ng_perf`` (:func:`perf_of`): ``num_turns`` (model calls of the episode, counted from ``response.output``:
  each run of items between ``function_call_output`` items is one model answer; at least 1),
  ``num_tool_calls`` (``function_call_output`` items: tools the agent ran), ``token_observability_coverage``
  (1.0 when ``response.usage`` gives token counts — the agent's sum over its model calls — else 0.0),
  ``prompt_tokens`` / ``cached_prompt_tokens`` / ``completion_tokens`` / ``reasoning_tokens`` (from
  ``usage.input_tokens``, ``input_tokens_details.cached_tokens``, ``output_tokens``,
  ``output_tokens_details.reasoning_tokens``; each only when a non-negative integer), ``total_latency_ms``
  (wall clock of the successful ``/run`` call, milliseconds, as measured by the collector). Key order and
  types are NeMo Gym's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from rewardgym.launch.relay_names import (
    ENVIRONMENT_SERVER_SUFFIX,
    environment_server_names,
    relay_name,
)

__all__ = [
    "ENVIRONMENT_SERVER_SUFFIX",
    "LEGACY_RESULT_TYPE",
    "environment_server_names",
    "perf_of",
    "relay_name",
    "relay_names",
]

LEGACY_RESULT_TYPE: Final = "legacy_agent"
_TOOL_OUTPUT: Final = "function_call_output"


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def perf_of(result: Mapping[str, Any], latency_ms: float | None) -> dict[str, Any]:
    """The ``ng_perf`` object of one rollout result (module docstring)."""
    response = result.get("response")
    output = response.get("output") if isinstance(response, dict) else None
    turns = tools = 0
    in_answer = False
    for item in output if isinstance(output, list) else ():
        if isinstance(item, dict) and item.get("type") == _TOOL_OUTPUT:
            tools += 1
            in_answer = False
        elif not in_answer:
            turns += 1
            in_answer = True
    usage = response.get("usage") if isinstance(response, dict) else None
    tokens: dict[str, int] = {}
    if isinstance(usage, dict):
        cached = usage.get("input_tokens_details")
        reasoning = usage.get("output_tokens_details")
        for key, value in (
            ("prompt_tokens", usage.get("input_tokens")),
            ("cached_prompt_tokens", cached.get("cached_tokens") if isinstance(cached, dict) else None),
            ("completion_tokens", usage.get("output_tokens")),
            ("reasoning_tokens", reasoning.get("reasoning_tokens") if isinstance(reasoning, dict) else None),
        ):
            if (count := _count(value)) is not None:
                tokens[key] = count
    perf: dict[str, Any] = {
        "num_turns": max(turns, 1),
        "num_tool_calls": tools,
        "token_observability_coverage": 1.0 if tokens else 0.0,
        **tokens,
    }
    if latency_ms is not None:
        perf["total_latency_ms"] = latency_ms
    return perf


def relay_names(agent_urls: Mapping[str, str]) -> dict[str, str]:
    """Agent → ``_ng_environment_server`` for the agents of a run: the relay the head registry reports in
    front of an agent (a NeMo Gym stack), else the name NeMo Gym's rule gives it, from the types and the
    instance names an :class:`~rewardgym.collect.watch.AgentDirectory` knows."""
    reported: Mapping[str, str] = getattr(agent_urls, "relays", None) or {}
    types = getattr(agent_urls, "agent_types", None) or {}
    agent_types = {name: types.get(name) for name in agent_urls}
    known: list[str] = []
    if not all(agent_types.values()):  # a registry that did not say: guess from the built-in agent types
        from rewardgym.registry import available

        known = available("responses_api_agents")
    taken = getattr(agent_urls, "instance_names", None) or set(agent_urls)
    return {**environment_server_names(agent_types, taken, known), **reported}
