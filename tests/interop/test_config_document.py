"""The config document served at ``/global_config_dict_yaml``: NeMo Gym's shape, no secret of any kind.

docs/reference/nemo_gym_interop.md §3. Built from child specs holding secrets under every key spelling,
under innocent keys (known to the supervisor), inside longer strings in several encodings, as mapping keys,
in header blocks and in URLs; the served bytes must contain none of them in any encoding, and no mask. The
head serves it (a real HTTP head registry on a port) exactly as NeMo Gym's client reads it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

import yaml
from omegaconf import OmegaConf

from rewardgym.config.secrets import secret_forms
from rewardgym.launch.child_spec import ChildSpec, InstanceRecord
from rewardgym.launch.config_document import config_document, document_body
from rewardgym.launch.registry_server import HeadServer
from rewardgym.launch.serve import ThreadedServer

KEYED = {  # every spelling of a secret key, each with its own value
    "openai_api_key": "sk-keyed-0001-abcdefgh",
    "API_KEY": "keyed-0002-abcdefgh",
    "Api-Key": "keyed-0003-abcdefgh",
    "openaiApiKey": "keyed-0004-abcdefgh",
    "x-api-key": "keyed-0005-abcdefgh",
    "Authorization": "Bearer keyed-0006-abcdefgh",
    "hf_token": "hf_keyed0007abcdefgh",
    "db_password": "keyed-0008-abcdefgh",
    "session_secret": "keyed-0009-abcdefgh",
    "auth_token": "keyed-0010-abcdefgh",
}
KNOWN = "known-0011-ünïcode/&?="  # a secret the supervisor knows, kept under innocent keys below
HEADER = "hdr-0012-abcdefgh"
URL_USER = "urluser-0013-abcdefgh"
SHAPED = "sk-shape0014abcdefghijkl"  # an OpenAI key shape, never registered anywhere
PATH_TOKEN = "pathtok0015abcdefgh"  # a token in an upstream URL's path: no pattern can see it
ALL_SECRETS = [*KEYED.values(), KNOWN, HEADER, URL_USER, SHAPED, PATH_TOKEN]


def _specs() -> list[ChildSpec]:
    model = {
        "name": "policy_model", "host": "127.0.0.1", "port": 2001,
        "openai_model": "m-1", "openai_base_url": f"https://gw.example/key/{PATH_TOKEN}/v1",
        **KEYED,
        "openai_default_headers": {"X-Custom": HEADER},
        "extra_body": {
            "user": KNOWN,                                    # raw
            "note": f"prefix {json.dumps(KNOWN)} suffix",     # JSON-escaped inside text
            "query": f"http://127.0.0.1:9/?k={quote(KNOWN, safe='')}",  # URL-encoded
            "items": ["fine", KNOWN, {"deep": repr(KNOWN)}],  # in a list; repr form
            KNOWN: "value under a secret mapping key",
            "plain": f"see {SHAPED}",
        },
        "mirror": f"http://{URL_USER}:pw@127.0.0.1:9/v1",
        "peers": {"env": "http://127.0.0.1:2002"},
        "log_dir": Path("/var/log/x"),
    }  # fmt: skip
    env = {
        "name": "env", "host": "127.0.0.1", "port": 2002, "domain": "math", "datasets": [{"name": "d"}],
        "description": "literal ${not.an.interpolation} text",
    }  # fmt: skip
    agent = {
        "name": "agent", "host": "127.0.0.1", "port": 2003, "max_steps": 4,
        "resources_server": {"type": "resources_servers", "name": "env"},
        "model_server": {"type": "responses_api_models", "name": "policy_model"},
    }  # fmt: skip
    return [
        ChildSpec(name="policy_model", kind="responses_api_models", implementation="openai_model",
                  config=model, secrets=[KNOWN]),
        ChildSpec(name="env", kind="resources_servers", implementation="mcqa", config=env, secrets=[KNOWN]),
        ChildSpec(name="agent", kind="responses_api_agents", implementation="simple_agent", config=agent,
                  secrets=[KNOWN]),
        # an instance already named like the relay: the relay gets another name
        ChildSpec(name="agent_environment_server", kind="resources_servers", implementation="mcqa",
                  config={"name": "agent_environment_server", "port": 2004}),
    ]  # fmt: skip


def _assert_no_secret(text: str) -> None:
    for secret in ALL_SECRETS:
        for form in secret_forms(secret):
            assert form not in text, (secret, form)
    assert "***" not in text


def test_document_has_nemo_gym_shape_and_no_secret() -> None:
    document = config_document(_specs(), head_host="127.0.0.1", head_port=2000)
    body = document_body(document)
    text = json.loads(body)  # NeMo Gym: json.loads, then a YAML parser
    _assert_no_secret(body.decode())
    _assert_no_secret(text)
    assert yaml.safe_load(text) == document
    # as NeMo Gym reads it: OmegaConf, interpolations resolved — literal text stays literal
    read = OmegaConf.to_container(OmegaConf.create(text), resolve=True)
    assert isinstance(read, dict)
    assert read["env"]["resources_servers"]["mcqa"]["description"] == "literal ${not.an.interpolation} text"
    assert read["agent"]["responses_api_agents"]["simple_agent"]["port"] == 2003
    assert document["head_server"] == {"host": "127.0.0.1", "port": 2000}
    model = document["policy_model"]["responses_api_models"]["openai_model"]
    assert model == {
        "openai_model": "m-1", "extra_body": {"items": ["fine", {}]}, "host": "127.0.0.1", "port": 2001,
    }  # fmt: skip
    assert document["env"]["resources_servers"]["mcqa"]["datasets"] == [{"name": "d"}]
    agent = document["agent"]["responses_api_agents"]["simple_agent"]
    assert agent["resources_server"] == {"type": "resources_servers", "name": "env"}
    # NeMo Gym's rule names the relay "agent_environment_server"; an instance has that name, so it is extended
    relay = document["agent_environment_server_environment_server"]["environment_servers"]["legacy_agent"]
    assert relay == {
        "host": "127.0.0.1", "port": 2003, "agent_server": {"type": "responses_api_agents", "name": "agent"},
    }  # fmt: skip
    assert "environment_servers" not in document["agent_environment_server"]


def test_the_head_serves_it_as_nemo_gym_reads_it(tmp_path: Path) -> None:
    specs = _specs()
    records = [
        InstanceRecord(name=s.name, kind=s.kind, implementation=s.implementation, url=s.url) for s in specs
    ]
    head = HeadServer(
        {"name": "head_server", "host": "127.0.0.1", "port": 0, "log_dir": tmp_path},
        instances=lambda: records,
        config_document=lambda: config_document(specs, head_host="127.0.0.1", head_port=2000),
    )
    with (
        ThreadedServer(head) as server,
        urllib.request.urlopen(f"{server.url}/global_config_dict_yaml", timeout=10) as reply,
    ):
        assert reply.status == 200 and reply.headers["content-type"] == "application/json"
        body = reply.read()
    _assert_no_secret(body.decode())
    document = yaml.safe_load(json.loads(body))
    assert document["agent"]["responses_api_agents"]["simple_agent"]["port"] == 2003


def test_a_head_without_specs_serves_no_document(tmp_path: Path) -> None:
    head = HeadServer(
        {"name": "head_server", "host": "127.0.0.1", "port": 0, "log_dir": tmp_path}, instances=lambda: []
    )
    with ThreadedServer(head) as server:
        try:
            urllib.request.urlopen(f"{server.url}/global_config_dict_yaml", timeout=10)
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
        else:
            raise AssertionError("expected 404")
