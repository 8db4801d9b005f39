"""Agents: servers that play one rollout of an environment against a model (``simple_agent``)."""
