"""The Ray settings without a cluster: ``--ray`` / ``ray:`` parsing, each replica's actor options, the bare
``--ray`` flag, and the refusals that come before anything starts (no token, a bad ``ray:`` block)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardgym.cli.main import _bare_ray_flag
from rewardgym.errors import ConfigError
from rewardgym.launch.child_spec import ChildSpec
from rewardgym.launch.ray_launch import RayOptions, RaySupervisor, actor_options, demand, offers, ray_options
from rewardgym.launch.supervisor import SupervisorOptions


def _spec(placement: dict[str, object], replicas: int = 1) -> ChildSpec:
    return ChildSpec(
        name="judge", kind="resources_servers", implementation="mcqa", config={"name": "judge"},
        replicas=replicas, placement=placement,
    )  # fmt: skip


def test_the_flag_wins_over_the_config_block() -> None:
    assert ray_options(None, None) is None
    assert ray_options({"address": "auto"}, None) == RayOptions(address="auto")
    assert ray_options({"address": "auto"}, "10.0.0.5:6379") == RayOptions(address="10.0.0.5:6379")
    assert ray_options(None, "local") == RayOptions(address=None)  # start a local cluster
    assert ray_options({"spec_dir": "/shared/rg"}, None) == RayOptions(spec_dir=Path("/shared/rg"))
    with pytest.raises(ConfigError, match="ray: unknown key"):
        ray_options({"adress": "auto"}, None)


def test_actor_options_from_the_instance_block() -> None:
    options = actor_options(
        _spec({"num_cpus": 2, "num_gpus": 1, "resources": {"judge_node": 1}, "labels": {"zone": "b"}}, 3)
    )
    assert options == {
        "max_restarts": 3, "max_task_retries": -1, "num_cpus": 2, "num_gpus": 1,
        "resources": {"judge_node": 1.0}, "label_selector": {"zone": "b"}, "scheduling_strategy": "SPREAD",
    }  # fmt: skip
    assert actor_options(_spec({"max_restarts": 0})) == {"max_restarts": 0, "max_task_retries": -1}
    with pytest.raises(ConfigError, match=r"judge\.resources_servers\.mcqa\.ray: unknown key\(s\) gpus"):
        actor_options(_spec({"gpus": 1}))


def test_nothing_starts_without_the_token(tmp_path: Path) -> None:
    supervisor = RaySupervisor([_spec({})], SupervisorOptions(log_dir=tmp_path), RayOptions())
    with pytest.raises(ConfigError, match="auth_token: placing the servers on Ray"):
        supervisor.check()
    tokened = SupervisorOptions(log_dir=tmp_path, auth_token="t")
    RaySupervisor([_spec({})], tokened, RayOptions()).check()


def test_a_bare_ray_flag_means_a_local_cluster() -> None:
    assert _bare_ray_flag(["env", "start", "--ray"]) == ["env", "start", "--ray", "local"]
    assert _bare_ray_flag(["env", "start", "--ray", "++auth_token=x"])[3] == "local"
    assert _bare_ray_flag(["env", "start", "--ray", "--agent", "a"])[3] == "local"
    assert _bare_ray_flag(["env", "start", "--ray", "auto"]) == ["env", "start", "--ray", "auto"]


def test_a_node_offers_what_a_replica_asks() -> None:
    asks = demand(
        actor_options(_spec({"num_gpus": 1, "resources": {"judge_node": 1}, "labels": {"zone": "b"}}))
    )
    assert asks == {"CPU": 1, "GPU": 1, "judge_node": 1.0, "labels": {"zone": "b"}}
    node = {"Alive": True, "Resources": {"CPU": 8.0, "GPU": 2.0, "judge_node": 4.0}, "Labels": {"zone": "b"}}
    assert offers(node, asks)
    assert not offers({**node, "Labels": {"zone": "a"}}, asks)
    assert not offers({**node, "Resources": {"CPU": 8.0, "GPU": 2.0}}, asks)
