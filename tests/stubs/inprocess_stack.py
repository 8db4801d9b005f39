"""A whole rewardgym stack in one test process, every server on a real 127.0.0.1 port.

:func:`start_stack` serves, each in a uvicorn thread (:class:`~rewardgym.launch.serve.ThreadedServer`):

- ``upstream``: the stub OpenAI-compatible upstream (:mod:`tests.stubs.openai_stub`, answers ``\\boxed{B}``);
- ``policy_model``: the real ``openai_model`` pass-through in front of the stub (API key ``api_key``);
- ``mcqa``, ``tool_env`` (``example_single_tool_call``), ``session_env`` (``example_session_state_mgmt``):
  real built-in environments;
- ``mcqa_simple_agent``: the real ``simple_agent`` playing ``mcqa`` with ``policy_model``;
- ``head``: the real head registry listing the five servers above (as ``gym env start`` would).

With ``auth_token`` every server except the stub requires it (peers send it to each other). Used by the
reliability suite (bad-input catalogue, schemathesis, secrets); :meth:`Stack.stop` stops everything.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from rewardgym.agents.simple_agent import SimpleAgent
from rewardgym.environments.example_session_state_mgmt.app import ExampleSessionStateMgmtServer
from rewardgym.environments.example_single_tool_call.app import ExampleSingleToolCallServer
from rewardgym.environments.mcqa.app import MCQAServer
from rewardgym.launch.child_spec import InstanceRecord
from rewardgym.launch.registry_server import HeadServer
from rewardgym.launch.serve import ThreadedServer
from rewardgym.models.openai_model import OpenAIModel
from rewardgym.servers.base import BaseServer
from tests.stubs.openai_stub import OpenAIStub, StubState, start_stub

AGENT = "mcqa_simple_agent"
SERVER_NAMES = ("policy_model", "mcqa", "tool_env", "session_env", AGENT)


@dataclass
class Stack:
    """The running servers: ``urls[name]``, ``servers[name]`` (the server objects) and the stub app."""

    upstream: ThreadedServer
    stub: OpenAIStub
    runners: dict[str, ThreadedServer] = field(default_factory=dict)
    servers: dict[str, Any] = field(default_factory=dict)
    auth_token: str | None = None

    @property
    def urls(self) -> dict[str, str]:
        return {name: runner.url for name, runner in self.runners.items()}

    @property
    def head_url(self) -> str:
        return self.runners["head"].url

    def auth_headers(self) -> dict[str, str]:
        return {"X-Rewardgym-Token": self.auth_token} if self.auth_token else {}

    def stop(self) -> None:
        self.stub.released = True
        for runner in reversed(list(self.runners.values())):
            runner.stop()
        self.upstream.stop()


def _serve(stack: Stack, name: str, server: BaseServer[Any] | HeadServer) -> None:
    stack.servers[name] = server
    stack.runners[name] = ThreadedServer(server).start()


def start_stack(
    *, api_key: str = "stack-upstream-key-0000", auth_token: str | None = None, log_dir: str | None = None
) -> Stack:
    """Start the stack of the module docstring (stop it with :meth:`Stack.stop`)."""
    upstream, stub = start_stub(StubState(text="\\boxed{B}"))
    stack = Stack(upstream=upstream, stub=stub, auth_token=auth_token)
    common: dict[str, Any] = {"log_dir": log_dir, "http": {"max_attempts": 1}}
    if auth_token:
        common["auth_token"] = auth_token
    try:
        model_config = {
            **common,
            "name": "policy_model",
            "openai_base_url": f"{upstream.url}/v1",
            "openai_api_key": api_key,
            "openai_model": "stub-model",
        }
        _serve(stack, "policy_model", OpenAIModel(model_config))
        _serve(stack, "mcqa", MCQAServer({**common, "name": "mcqa"}))
        _serve(stack, "tool_env", ExampleSingleToolCallServer({**common, "name": "tool_env"}))
        _serve(stack, "session_env", ExampleSessionStateMgmtServer({**common, "name": "session_env"}))
        agent_config = {
            **common,
            "name": AGENT,
            "resources_server": {"type": "resources_servers", "name": "mcqa"},
            "model_server": {"type": "responses_api_models", "name": "policy_model"},
            "peers": {"mcqa": stack.urls["mcqa"], "policy_model": stack.urls["policy_model"]},
        }
        _serve(stack, AGENT, SimpleAgent(agent_config))
        kinds = {
            "policy_model": ("responses_api_models", "openai_model"),
            "mcqa": ("resources_servers", "mcqa"),
            "tool_env": ("resources_servers", "example_single_tool_call"),
            "session_env": ("resources_servers", "example_session_state_mgmt"),
            AGENT: ("responses_api_agents", "simple_agent"),
        }
        now = time.time()
        records = [
            InstanceRecord(
                name=name,
                kind=kinds[name][0],
                implementation=kinds[name][1],
                url=stack.urls[name],
                status="ready",
                started_at=now,
            )
            for name in SERVER_NAMES
        ]
        head_config = {"name": "head_server", "log_dir": log_dir}
        if auth_token:
            head_config["auth_token"] = auth_token
        _serve(stack, "head", HeadServer(head_config, instances=lambda: records))
    except BaseException:
        stack.stop()
        raise
    return stack
