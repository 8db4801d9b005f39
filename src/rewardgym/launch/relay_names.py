"""The name NeMo Gym 0.7.0 gives the ``legacy_agent`` relay it puts in front of an agent with no environment
server — shared by the rows our collector writes (``_ng_environment_server``,
:mod:`rewardgym.collect.rollout_fields`) and the config document our head serves NeMo Gym's collector
(:mod:`rewardgym.launch.config_document`), so a stack's rows carry the same name whichever collector ran it.

The rule (docs/reference/contract.md §4.9): the agent's name without its ``_<agent type>`` suffix (else
without ``_agent``), plus ``_environment_server`` (``mcqa_simple_agent`` of type ``simple_agent`` →
``mcqa_environment_server``). When that name is already an instance name or another agent's relay, it is
the whole agent name plus the suffix, extended until it is free. Agents are named in sorted order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

ENVIRONMENT_SERVER_SUFFIX: Final = "_environment_server"


def relay_name(agent: str, agent_type: str | None) -> str:
    """The name NeMo Gym 0.7.0 gives the ``legacy_agent`` relay of ``agent`` (before any name clash)."""
    stem = agent
    if agent_type:
        stem = agent.removesuffix(f"_{agent_type}").removesuffix(agent_type).rstrip("_")
    if stem == agent:
        stem = agent.removesuffix("_agent").rstrip("_")
    return f"{stem or agent_type or agent}{ENVIRONMENT_SERVER_SUFFIX}"


def _agent_type(agent: str, agent_type: str | None, known_types: Iterable[str]) -> str | None:
    """The agent's type as NeMo Gym names it (a built-in name; a ``module:Class`` has none); when unknown
    (a head registry that did not say), the longest of ``known_types`` the name ends with."""
    if agent_type and ":" not in agent_type:
        return agent_type
    endings = [t for t in known_types if agent.endswith(f"_{t}")]
    return max(endings, key=len) if endings else None


def environment_server_names(
    agent_types: Mapping[str, str | None], taken: Iterable[str] = (), known_types: Iterable[str] = ()
) -> dict[str, str]:
    """Agent name → its relay's name (module docstring); ``taken`` are the config's instance names."""
    used = set(taken)
    types = list(known_types)
    names: dict[str, str] = {}
    for agent in sorted(agent_types):
        name = relay_name(agent, _agent_type(agent, agent_types[agent], types))
        if name in used or name in names.values():
            name = f"{agent}{ENVIRONMENT_SERVER_SUFFIX}"
        while name in used:
            name += ENVIRONMENT_SERVER_SUFFIX
        names[agent] = name
    return names
