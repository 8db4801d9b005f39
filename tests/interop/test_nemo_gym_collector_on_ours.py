"""NeMo Gym 0.7.0's collector through our stack (docs/reference/nemo_gym_interop.md §3).

A real ``gym env start`` (model server → stub upstream, example_single_tool_call, simple_agent) holding
secrets of several kinds; a client replays the exact request sequence NeMo Gym 0.7.0's ``gym eval run
--no-serve`` made against our stack (recorded in tests/data/nemo_gym/interop/collector_exchange.jsonl):
``GET /global_config_dict_yaml`` → route each row to the environment server fronting its agent →
``POST /run`` per row → ``GET /global_config_dict_yaml`` → ``POST /aggregate_metrics``. Every step must
succeed with the answer shapes recorded, and the served config document must hold no secret in any
encoding.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest
import yaml
from omegaconf import OmegaConf

from rewardgym.config.secrets import secret_forms
from rewardgym.launch.serve import ThreadedServer
from tests.stubs.nemo_gym_stack import INTEROP
from tests.stubs.openai_stub import StubState, start_stub
from tests.stubs.processes import GymProcess, kill_marked, new_marker, start_env

pytestmark = pytest.mark.slow  # one real `gym env start` for the module (≈ 6-10 s on the 2-core machine)

API_KEY = "sk-interop-KEY-7f3a9c1e5b"
HEADER_SECRET = "hdr-interop-8d2e4f6a1c"
SESSION_SECRET = "sess-interop-2b4d6f8a0c"
ENV_SECRET = "envval-interop-5e7a9c1b3d"
SECRETS = (API_KEY, HEADER_SECRET, SESSION_SECRET, ENV_SECRET)
AGENT = "example_single_tool_call_simple_agent"
STACK = f"""\
policy_model:
  responses_api_models:
    openai_model:
      openai_base_url: ${{policy_base_url}}
      openai_api_key: ${{policy_api_key}}
      openai_model: ${{policy_model_name}}
      openai_default_headers: {{X-Org-Auth: {HEADER_SECRET}}}
      extra_body: {{user: "${{oc.env:NEMO14_INTEROP_ENV}}"}}
example_single_tool_call:
  resources_servers:
    example_single_tool_call:
      session_secret: {SESSION_SECRET}
      domain: agent
{AGENT}:
  responses_api_agents:
    simple_agent:
      resources_server: {{type: resources_servers, name: example_single_tool_call}}
      model_server: {{type: responses_api_models, name: policy_model}}
"""


@pytest.fixture(scope="module")
def our_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp_path = tmp_path_factory.mktemp("interop")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NEMO14_INTEROP_ENV", ENV_SECRET)
        yield from _stack(tmp_path)


def _stack(tmp_path: Path) -> Iterator[str]:
    upstream: ThreadedServer
    upstream, stub = start_stub(StubState(mode="tool_then_answer"))
    (tmp_path / "stack.yaml").write_text(STACK)
    marker = new_marker()
    args = ["--config", "stack.yaml", "--model-url", f"{upstream.url}/v1", "--model", "stub-model",
            "--model-api-key", API_KEY, "--log-dir", str(tmp_path / "logs")]  # fmt: skip
    env: GymProcess | None = None
    try:
        env, head = start_env(args, cwd=tmp_path, marker=marker)
        yield head
    finally:
        if env is not None:
            env.kill()
        kill_marked(marker)
        stub.released = True
        upstream.stop()


def _http(
    method: str, url: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    data = None if body is None else orjson.dumps(body)
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    with urllib.request.urlopen(request, timeout=60) as reply:
        return reply.status, reply.read()


def _recording() -> list[dict[str, Any]]:
    lines = (INTEROP / "collector_exchange.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines]


def _environment_server_for(document: dict[str, Any], agent: str) -> str:
    """Where NeMo Gym 0.7.0 sends an agent's rows: the environment server naming it as ``agent_server``."""
    fronts = []
    for block in document.values():
        if not isinstance(block, dict) or "environment_servers" not in block:
            continue
        (settings,) = block["environment_servers"].values()
        if (settings.get("agent_server") or {}).get("name") == agent:
            fronts.append(f"http://{settings['host']}:{settings['port']}")
    assert len(fronts) == 1, document
    return fronts[0]


def test_nemo_gym_request_sequence_completes_on_our_stack(our_stack: str) -> None:
    head = our_stack
    recording = _recording()
    assert [(e["method"], urlsplit(e["url"]).path) for e in recording] == [
        ("GET", "/global_config_dict_yaml"), ("POST", "/run"), ("POST", "/run"), ("POST", "/run"),
        ("GET", "/global_config_dict_yaml"), ("POST", "/aggregate_metrics"),
    ]  # fmt: skip
    document: dict[str, Any] = {}
    runs = 0
    for entry in recording:
        path = urlsplit(entry["url"]).path
        if path == "/global_config_dict_yaml":
            status, body = _http("GET", f"{head}{path}")
            # NeMo Gym: json.loads(body) is YAML text, which it loads with OmegaConf.create
            loaded = OmegaConf.to_container(OmegaConf.create(json.loads(body)), resolve=True)
            assert isinstance(loaded, dict)
            document = {str(k): v for k, v in loaded.items()}
            assert status == 200 and document["head_server"]["port"] == urlsplit(head).port
            continue
        target = _environment_server_for(document, AGENT)
        status, body = _http("POST", f"{target}{path}", entry["request_body"], entry["request_headers"])
        answer = orjson.loads(body)
        assert status == entry["status"] == 200
        # The recording is of our stack before /run answered NeMo Gym 0.7.0's three outcome keys, as its own
        # agent does: those are the only difference.
        extra = {"mask_sample", "failure_kind", "failure_reason"} if path == "/run" else set()
        assert set(answer) == set(entry["response_body"]) | extra, (path, sorted(answer))
        if path == "/run":
            runs += 1
            assert answer["reward"] == 1.0 and answer["response"]["output"]
        else:
            assert answer["agent_metrics"]["mean/reward"] == 1.0
    assert runs == 3


def test_served_config_holds_no_secret(our_stack: str) -> None:
    status, body = _http("GET", f"{our_stack}/global_config_dict_yaml")
    assert status == 200
    text = json.loads(body)
    document = yaml.safe_load(text)
    for secret in SECRETS:
        for form in secret_forms(secret):
            assert form not in body.decode() and form not in text, (secret, form)
    assert "***" not in text
    model = document["policy_model"]["responses_api_models"]["openai_model"]
    assert "openai_api_key" not in model and "openai_default_headers" not in model
    assert model["openai_model"] == "stub-model" and "session_secret" not in str(document)
    # the relay NeMo Gym's collector needs is the agent itself: no extra process
    # named by NeMo Gym 0.7.0's rule, the name our collector writes into rows as _ng_environment_server
    relay = document["example_single_tool_call_environment_server"]["environment_servers"]["legacy_agent"]
    agent = document[AGENT]["responses_api_agents"]["simple_agent"]
    assert (relay["host"], relay["port"]) == (agent["host"], agent["port"])
    assert relay["agent_server"] == {"type": "responses_api_agents", "name": AGENT}
    # /server_instances carries the field names NeMo Gym's `gym env status` indexes
    _status, raw = _http("GET", f"{our_stack}/server_instances")
    for record in orjson.loads(raw):
        assert record["process_name"] == record["name"] and record["server_type"] == record["kind"]
        assert record["url"] == f"http://{record['host']}:{record['port']}"
    for secret in SECRETS:
        assert secret not in raw.decode()
