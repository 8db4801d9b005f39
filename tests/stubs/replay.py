"""Helpers to replay recorded episodes through simple_agent and a scripted stub model (environment tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardgym.agents.simple_agent import SimpleAgent
from rewardgym.servers.launch import ThreadedServer

Serve = Callable[[Any], ThreadedServer]


def stamps_removed(rollout: dict[str, Any]) -> set[str]:
    """A recorded rollout's keys without the collector's stamps (what /verify itself returned)."""
    return {k for k in rollout if not k.startswith("_ng_") and k != "agent_ref"}


def model_turns(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recorded output as the model's turns (stub script entries): the items between tool outputs."""
    turns: list[dict[str, Any]] = []
    current: list[dict[str, Any]] = []
    for item in output:
        if item["type"] == "function_call_output":
            if current:
                turns.append({"output": current})
                current = []
        else:
            current.append(item)
    return [*turns, {"output": current}] if current else turns


def serve_agent(serve: Serve, environment: str, env_url: str, model_url: str) -> ThreadedServer:
    """A simple_agent for ``environment`` (at ``env_url``) and the model at ``model_url``, single attempts."""
    return serve(
        SimpleAgent(
            {
                "name": f"{environment}_simple_agent",
                "resources_server": {"type": "resources_servers", "name": environment},
                "model_server": {"type": "responses_api_models", "name": "policy_model"},
                "peers": {environment: env_url, "policy_model": model_url},
                "http": {"max_attempts": 1},
            }
        )
    )


def function_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def message(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def response(output: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": "r", "created_at": 0.0, "model": "m", "output": output}
