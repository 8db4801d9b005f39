"""The test kit for environments — ours and third-party ones alike.

- Run an environment: in-process (call ``await server.verify(Request(...))`` on a server object) or as a
  server on a real 127.0.0.1 port with :class:`ThreadedServer` (the ``serve`` pytest fixture does it and
  stops it after the test); :func:`serve_agent` puts a ``simple_agent`` in front of it.
- Verifier cases as data: :func:`load_cases` reads an environment's ``verifier_cases.jsonl`` and
  :func:`check_cases` runs them over HTTP (:mod:`rewardgym.testing.cases`).
- A scripted model: :class:`ScriptedModel` is the ``scripted`` model type (``gym eval run --model-type
  scripted``), answering from a list of replies or a function in its own process — serve it next to the
  environment and :func:`serve_agent` for a whole episode without any other process.
  :class:`OpenAIStub` is a real OpenAI-compatible upstream (Responses and Chat Completions) that answers
  from a script and records requests (the ``scripted_model`` fixture starts one), for testing a model
  server; :class:`ScriptedModelServer` pops whole turns and records the requests, in-process.
- Compatibility with recorded rollouts: :func:`match_recorded` + :func:`replay_recorded_rollouts` (through
  ``/verify``) and :func:`replay_through_agent` (whole episodes, the model replaying the recorded turns), with
  declared ``known_differences``.

The fixtures come from the ``rewardgym`` pytest plugin, registered by installing the package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardgym.launch.serve import ThreadedServer
from rewardgym.models.scripted import ScriptedModel
from rewardgym.testing.cases import VerifierCase, check_cases, load_cases
from rewardgym.testing.checks import (
    COLLECTOR_COLUMNS,
    ScriptedModelServer,
    assert_echoed,
    post,
    shipped_server,
)
from rewardgym.testing.client import Reply, call
from rewardgym.testing.items import function_call, message, response
from rewardgym.testing.replay import (
    Outcome,
    Recorded,
    ReplayMismatch,
    match_recorded,
    model_turns,
    read_jsonl,
    recorded_examples,
    replay_recorded_rollouts,
    replay_through_agent,
    user_text,
    verify_keys,
)
from rewardgym.testing.scripted_model import OpenAIStub, StubState, start_stub

__all__ = [
    "COLLECTOR_COLUMNS",
    "OpenAIStub",
    "Outcome",
    "Recorded",
    "ReplayMismatch",
    "Reply",
    "Scripted",
    "ScriptedModel",
    "ScriptedModelServer",
    "Serve",
    "StubState",
    "ThreadedServer",
    "VerifierCase",
    "assert_echoed",
    "call",
    "check_cases",
    "function_call",
    "load_cases",
    "match_recorded",
    "message",
    "model_turns",
    "post",
    "read_jsonl",
    "recorded_examples",
    "replay_recorded_rollouts",
    "replay_through_agent",
    "response",
    "serve_agent",
    "shipped_server",
    "start_stub",
    "user_text",
    "verify_keys",
]


Serve = Callable[[Any], ThreadedServer]
"""The ``serve`` fixture's type: a server object in, its running :class:`ThreadedServer` out."""
Scripted = tuple[ThreadedServer, OpenAIStub]
"""The ``scripted_model`` fixture's type: (runner with ``.url``, stub with ``.state`` / ``.requests``)."""


def serve_agent(
    serve: Any, environment: str, env_url: str, model_url: str, *, max_attempts: int = 1
) -> ThreadedServer:
    """A ``simple_agent`` for ``environment`` (at ``env_url``) and the model at ``model_url``, started with
    ``serve`` (the fixture); single attempts by default, so a test sees the first failure."""
    from rewardgym.agents.simple_agent import SimpleAgent

    agent = SimpleAgent(
        {
            "name": f"{environment}_simple_agent",
            "resources_server": {"type": "resources_servers", "name": environment},
            "model_server": {"type": "responses_api_models", "name": "policy_model"},
            "peers": {environment: env_url, "policy_model": model_url},
            "http": {"max_attempts": max_attempts},
        }
    )
    started: ThreadedServer = serve(agent)
    return started
