"""Server-instance detection, almost-servers, references, hosts and free-port assignment."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from rewardgym.config import SERVER_KINDS, GymConfig, ServerInstance, can_bind, load_config, pick_free_port
from rewardgym.errors import ConfigError
from tests.config.conftest import WriteFile

THREE_SERVERS = """
policy_model:
  responses_api_models:
    openai_model:
      entrypoint: app.py
      openai_base_url: http://upstream/v1
mcqa:
  resources_servers:
    mcqa: {entrypoint: app.py, domain: knowledge, port: 18001}
mcqa_simple_agent:
  responses_api_agents:
    simple_agent:
      resources_server: {type: resources_servers, name: mcqa}
      model_server: {type: responses_api_models, name: policy_model}
      datasets:
      - {name: train, type: train, jsonl_fpath: data/train.jsonl}
num_repeats: {simple_agent: 3, _default: 1}
responses_create_params: {temperature: 0.5}
plain_mapping: {a: 1}
scalar_key: 5
"""


def test_server_kinds_constant() -> None:
    assert SERVER_KINDS == ("responses_api_models", "resources_servers", "responses_api_agents")


def test_instances_detected_in_order_with_fields(tmp_path: Path, write: WriteFile) -> None:
    write("s.yaml", THREE_SERVERS)
    cfg = load_config(["s.yaml"], cwd=tmp_path)
    assert list(cfg.instances) == ["policy_model", "mcqa", "mcqa_simple_agent"]
    mcqa = cfg.instances["mcqa"]
    assert isinstance(mcqa, ServerInstance)
    assert (mcqa.kind, mcqa.implementation, mcqa.host, mcqa.port) == (
        "resources_servers",
        "mcqa",
        "127.0.0.1",
        18001,
    )
    assert mcqa.url == "http://127.0.0.1:18001"
    assert mcqa.fields == {"domain": "knowledge", "port": 18001, "host": "127.0.0.1"}
    agent = cfg.instances["mcqa_simple_agent"]
    assert agent.fields["resources_server"] == {"type": "resources_servers", "name": "mcqa"}
    assert [i.name for i in cfg.instances_of("responses_api_models")] == ["policy_model"]
    # entrypoint is dropped from the instance fields but kept in the config itself.
    assert cfg.get("mcqa.resources_servers.mcqa.entrypoint") == "app.py"
    assert cfg.get("mcqa.resources_servers.mcqa.host") == "127.0.0.1"


def test_instance_lookup_suggests_names(tmp_path: Path, write: WriteFile) -> None:
    write("s.yaml", THREE_SERVERS)
    cfg = load_config(["s.yaml"], cwd=tmp_path)
    assert cfg.instance("mcqa").port == 18001
    with pytest.raises(ConfigError, match="did you mean 'mcqa_simple_agent'"):
        cfg.instance("mcqa_simple_agnt")


@pytest.mark.parametrize(
    ("block", "fragment"),
    [
        (
            "x: {resources_servers: {a: {}}, responses_api_agents: {b: {}}}",
            "server instance 'x': has several server kinds",
        ),
        ("x: {resources_servers: {a: {}}, port: 5}", "server instance 'x': unexpected key(s) 'port'"),
        (
            "x: {resources_servers: 3}",
            "x.resources_servers must be a mapping with exactly one implementation",
        ),
        ("x: {resources_servers: {a: {}, b: {}}}", "exactly one implementation key"),
        ("x: {resources_servers: {}}", "exactly one implementation key"),
        ("x: {resources_servers: {a: [1, 2]}}", "x.resources_servers.a must be a mapping of fields"),
        ("resources_servers: {mcqa: {}}", "top-level key 'resources_servers' is a server kind"),
        ("head_server: {resources_servers: {a: {}}}", "'head_server' is a reserved top-level key"),
    ],
)
def test_almost_servers_are_errors(tmp_path: Path, write: WriteFile, block: str, fragment: str) -> None:
    write("s.yaml", block + "\n")
    with pytest.raises(ConfigError) as err:
        load_config(["s.yaml"], cwd=tmp_path)
    assert fragment in str(err.value)


def test_null_fields_mean_no_fields(tmp_path: Path, write: WriteFile) -> None:
    write("s.yaml", "x:\n  resources_servers:\n    a:\n")
    cfg = load_config(["s.yaml"], cwd=tmp_path)
    assert cfg.instances["x"].fields["host"] == "127.0.0.1"


def test_reference_to_missing_instance_suggests(tmp_path: Path, write: WriteFile) -> None:
    write("s.yaml", THREE_SERVERS)
    with pytest.raises(ConfigError) as err:
        load_config(
            ["s.yaml"],
            ["++mcqa_simple_agent.responses_api_agents.simple_agent.model_server.name=policy_modle"],
            cwd=tmp_path,
        )
    message = str(err.value)
    assert message.startswith("mcqa_simple_agent.responses_api_agents.simple_agent.model_server:")
    assert "'policy_modle', which is not in the config (did you mean 'policy_model'?)" in message


def test_reference_to_instance_of_wrong_kind(tmp_path: Path, write: WriteFile) -> None:
    write("s.yaml", THREE_SERVERS)
    with pytest.raises(ConfigError, match="'mcqa' is a resources server"):
        load_config(
            ["s.yaml"],
            ["++mcqa_simple_agent.responses_api_agents.simple_agent.model_server.name=mcqa"],
            cwd=tmp_path,
        )


def test_reference_when_no_instance_of_that_kind(tmp_path: Path, write: WriteFile) -> None:
    write(
        "s.yaml",
        "agent:\n  responses_api_agents:\n    simple_agent:\n"
        "      model_server: {type: responses_api_models, name: policy_model}\n",
    )
    with pytest.raises(ConfigError, match="defines no responses_api_models instance"):
        load_config(["s.yaml"], cwd=tmp_path)


def test_default_host_and_head_server(tmp_path: Path, write: WriteFile) -> None:
    write("s.yaml", THREE_SERVERS + "default_host: localhost\nhead_server: {port: 11555}\n")
    cfg = load_config(["s.yaml"], cwd=tmp_path)
    assert cfg.head_server == ("localhost", 11555)
    assert {i.host for i in cfg.instances.values()} == {"localhost"}
    assert cfg.get("head_server") == {"port": 11555, "host": "localhost"}


def test_head_server_default(tmp_path: Path) -> None:
    cfg = load_config([], cwd=tmp_path)
    assert cfg.head_server == ("127.0.0.1", 11000)
    assert cfg.instances == {}


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        (
            "++mcqa.resources_servers.mcqa.port=70000",
            "mcqa.resources_servers.mcqa.port: port must be an integer",
        ),
        ("++mcqa.resources_servers.mcqa.port=abc", "port must be an integer in 1..65535, got 'abc'"),
        ("++mcqa.resources_servers.mcqa.port=11000", "port 11000 is already used by head_server"),
        (
            "++policy_model.responses_api_models.openai_model.port=18001",
            "mcqa.resources_servers.mcqa.port: port 18001 is already used by policy_model",
        ),
        ("++head_server=5", "head_server must be a mapping"),
    ],
)
def test_bad_ports(tmp_path: Path, write: WriteFile, override: str, fragment: str) -> None:
    write("s.yaml", THREE_SERVERS)
    with pytest.raises(ConfigError) as err:
        load_config(["s.yaml"], [override], cwd=tmp_path)
    assert fragment in str(err.value)


def test_free_ports_are_distinct_bindable_and_avoid_taken(tmp_path: Path, write: WriteFile) -> None:
    blocks = "".join(f"s{i}:\n  resources_servers:\n    impl: {{}}\n" for i in range(8))
    write("s.yaml", blocks + "s0b:\n  resources_servers:\n    impl: {port: 18002}\n")
    cfg = load_config(["s.yaml"], ["++disallowed_ports=[18003]"], cwd=tmp_path)
    ports = [inst.port for inst in cfg.instances.values()]
    assert len(set(ports)) == len(ports) == 9
    auto = ports[:8]
    assert all(10001 <= p <= 20000 for p in auto)
    assert not {11000, 18002, 18003} & set(auto)
    assert all(can_bind("127.0.0.1", p) for p in auto)
    # The chosen ports are written back into the config (what child servers and the head server see).
    assert [cfg.get(f"s{i}.resources_servers.impl.port") for i in range(8)] == auto


def test_port_from_environment_variable_string(
    tmp_path: Path, write: WriteFile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RG_TEST_PORT", "18555")
    write("s.yaml", "x:\n  resources_servers:\n    impl: {port: '${oc.env:RG_TEST_PORT}'}\n")
    cfg = load_config(["s.yaml"], cwd=tmp_path)
    assert cfg.instances["x"].port == 18555
    assert cfg.get("x.resources_servers.impl.port") == 18555


def test_port_range_settings_are_honoured(tmp_path: Path, write: WriteFile) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    write("s.yaml", "x:\n  resources_servers:\n    impl: {}\n")
    cfg = load_config(["s.yaml"], [f"++port_range_low={free}", f"++port_range_high={free}"], cwd=tmp_path)
    assert cfg.instances["x"].port == free


def test_port_in_use_is_never_picked() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        busy = listener.getsockname()[1]
        assert not can_bind("127.0.0.1", busy)
        with pytest.raises(ConfigError, match="no free port"):
            pick_free_port("127.0.0.1", port_range=(busy, busy))

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    with pytest.raises(ConfigError, match="no free port"):
        pick_free_port("127.0.0.1", taken={free}, port_range=(free, free))
    assert pick_free_port("127.0.0.1", port_range=(free, free)) == free


def test_unknown_host_is_an_error() -> None:
    with pytest.raises(ConfigError, match="cannot listen on host"):
        pick_free_port("192.0.2.1")  # TEST-NET-1: not a local address


def test_round_trip_through_a_plain_dict_keeps_ports(tmp_path: Path, write: WriteFile) -> None:
    write("s.yaml", THREE_SERVERS + "x: ${head_server.port}\n")
    cfg = load_config(["s.yaml"], cwd=tmp_path)
    again = GymConfig.from_dict(cfg.to_dict())
    assert again.instances == cfg.instances
    assert again.head_server == cfg.head_server
    assert again.get("x") == 11000
    with pytest.raises(ConfigError, match="did you mean 'mcqa'"):
        GymConfig.from_dict(
            {
                **cfg.to_dict(),
                "a": {"responses_api_agents": {"s": {"r": {"type": "resources_servers", "name": "mcq"}}}},
            }
        )


def test_interpolations_can_refer_to_filled_in_hosts_and_ports(tmp_path: Path, write: WriteFile) -> None:
    write(
        "s.yaml",
        THREE_SERVERS
        + "head_url: http://${head_server.host}:${head_server.port}\n"
        + "model_port: ${policy_model.responses_api_models.openai_model.port}\n"
        + "mcqa_port: ${mcqa.resources_servers.mcqa.port}\n",
    )
    cfg = load_config(["s.yaml"], cwd=tmp_path)
    assert cfg.get("head_url") == "http://127.0.0.1:11000"
    assert cfg.get("model_port") == cfg.instances["policy_model"].port
    assert cfg.get("mcqa_port") == 18001
    raw = cfg.to_dict(resolve=False)
    assert raw["model_port"] == "${policy_model.responses_api_models.openai_model.port}"
    assert (
        raw["policy_model"]["responses_api_models"]["openai_model"]["port"]
        == cfg.instances["policy_model"].port
    )
