"""``gym env start --ray`` on a real two-node Ray cluster on this machine (``ray.cluster_utils.Cluster``).

One cluster and one placed stack for the whole module (Ray's start-up is the slow part): node 1 is the
head, node 2 alone has the custom resource ``node2`` (node 1 has ``node1``). The stack: a model server
(→ the scripted stub) and the agent of a slow-verify environment (2 replicas) pinned to node 1, the
environment's 4 replicas spread over both nodes, and example_session_state_mgmt with 2 replicas that ask for
``node2`` and its agent. The tests read the head
registry, collect with ``gym eval run --no-serve`` and finally kill node 2's raylet in the middle of a run.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from rewardgym.launch.serve import ThreadedServer
from tests.stubs.openai_stub import StubState, start_stub
from tests.stubs.processes import (
    REPO_ROOT,
    GymProcess,
    free_port,
    jsonl_rows,
    kill_marked,
    new_marker,
    poll,
    row_key,
)

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

TOKEN = "rg-ray-test-token-Zq81xk"
STACK = """\
policy_model:
  responses_api_models:
    openai_model:
      openai_base_url: {upstream}/v1
      openai_api_key: sk-ray-test-KEY-77
      openai_model: stub
      ray: {{resources: {{node1: 0.1}}, num_cpus: 0}}
slow:
  resources_servers:
    tests.stubs.slow_env:SlowVerifyServer:
      replicas: 4
      verify_delay_s: 0.05
      verify_concurrency: 1
slow_agent:
  responses_api_agents:
    simple_agent:
      replicas: 2
      ray: {{resources: {{node1: 0.1}}, num_cpus: 0}}
      resources_server: {{type: resources_servers, name: slow}}
      model_server: {{type: responses_api_models, name: policy_model}}
counter:
  resources_servers:
    example_session_state_mgmt:
      replicas: 2
      ray: {{resources: {{node2: 0.1}}, num_cpus: 0}}
counter_agent:
  responses_api_agents:
    simple_agent:
      resources_server: {{type: resources_servers, name: counter}}
      model_server: {{type: responses_api_models, name: policy_model}}
"""


@dataclass
class Placed:
    cluster: Any
    node2: Any
    head_url: str
    env: GymProcess
    workdir: Path
    marker: str
    env_vars: dict[str, str]

    def records(self) -> list[dict[str, Any]]:
        request_headers = {"X-Rewardgym-Token": TOKEN}
        import urllib.request

        request = urllib.request.Request(f"{self.head_url}/server_instances", headers=request_headers)
        with urllib.request.urlopen(request, timeout=10) as reply:
            return list(orjson.loads(reply.read()))

    def start_other(self, folder: Path) -> GymProcess:
        """``gym env start --ray`` of ``folder``'s ``stack.yaml`` on this cluster (a second stack, not
        under this one's marker)."""
        env_vars = {k: v for k, v in self.env_vars.items() if k != "REWARDGYM_TEST_MARKER"}
        return GymProcess(
            ["env", "start", "--config", "stack.yaml", "--ray", self.cluster.address,
             f"++head_server.port={free_port()}"],
            cwd=folder, env=env_vars,
        )  # fmt: skip

    def collect(self, rows: Path, agent: str, out: str, concurrency: int = 8) -> GymProcess:
        return GymProcess(
            ["eval", "run", "--no-serve", "--head-url", self.head_url, "--input", str(rows), "--agent", agent,
             "--concurrency", str(concurrency), "--output", out],
            cwd=self.workdir, marker=self.marker, env=self.env_vars,
        )  # fmt: skip


def _rows(path: Path, count: int, *, counter: bool = False) -> Path:
    params = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}
    tools = [{"type": "function", "name": "increment_counter", "parameters": params, "strict": False}]
    rows = []
    for i in range(count):
        row: dict[str, Any] = {"responses_create_params": {"input": f"add 3 to {i}", "tools": tools}}
        if counter:
            row |= {"initial_count": i, "expected_count": i + 3}
        rows.append(row)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def upstream() -> Iterator[ThreadedServer]:
    # Every model answer first calls increment_counter by 3, then answers: the counter environment counts
    # it; the slow environment has no such tool (the agent passes its 404 text back) and rewards 1.0.
    state = StubState(
        mode="tool_then_answer", tool_name="increment_counter", tool_args='{"count": 3}', text="ok"
    )
    runner, app = start_stub(state)
    app.state.record = False
    yield runner
    app.released = True
    runner.stop()


@pytest.fixture(scope="module")
def placed(tmp_path_factory: pytest.TempPathFactory, upstream: ThreadedServer) -> Iterator[Placed]:
    # Workers inherit the environment of the cluster's processes: the test stubs must be importable there.
    saved = dict(os.environ)
    os.environ["PYTHONPATH"] = str(REPO_ROOT)
    os.environ["RAY_memory_monitor_refresh_ms"] = "0"  # noqa: SIM112 - Ray spells it so
    system = {"health_check_period_ms": 500, "health_check_failure_threshold": 3}
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 2,
            "resources": {"node1": 1},
            "include_dashboard": False,
            "_system_config": system,
        },
    )
    node2 = cluster.add_node(num_cpus=2, resources={"node2": 1})
    cluster.wait_for_nodes()
    workdir = tmp_path_factory.mktemp("ray")
    (workdir / "stack.yaml").write_text(STACK.format(upstream=upstream.url))
    (workdir / "env.yaml").write_text(f"auth_token: {TOKEN}\n")
    os.chmod(workdir / "env.yaml", 0o600)
    marker = new_marker()
    env_vars = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"}
    env_vars["REWARDGYM_TEST_MARKER"] = marker
    env_vars.pop("COLUMNS", None)
    head = free_port()
    gym = GymProcess(
        ["env", "start", "--config", "stack.yaml", "--ray", cluster.address,
         "--log-dir", str(workdir / "logs"), f"++head_server.port={head}"],
        cwd=workdir, marker=marker, env=env_vars,
    )  # fmt: skip
    try:
        assert gym.wait_for("servers ready", timeout=300), gym.text
        yield Placed(cluster, node2, f"http://127.0.0.1:{head}", gym, workdir, marker, env_vars)
    finally:
        gym.signal(__import__("signal").SIGTERM)
        gym.finish(timeout=60)
        kill_marked(marker)
        cluster.shutdown()  # type: ignore[no-untyped-call]
        os.environ.clear()
        os.environ.update(saved)


def test_the_registry_lists_where_each_replica_runs(placed: Placed) -> None:
    records = placed.records()
    by_name = collections.defaultdict(list)
    for record in records:
        by_name[record["name"]].append(record)
    assert {n: len(r) for n, r in by_name.items()} == {
        "policy_model": 1, "slow": 4, "slow_agent": 2, "counter": 2, "counter_agent": 1,
    }  # fmt: skip
    assert all(r["status"] == "ready" and r["node_id"] and r["node_ip"] for r in records)
    assert all(r["url"] == f"http://{r['node_ip']}:{r['url'].rsplit(':', 1)[1]}" for r in records)
    # every server's port on its node comes from the config's port range (default 10001..20000; issue 22)
    assert all(10001 <= int(r["url"].rsplit(":", 1)[1]) <= 20000 for r in records), [
        r["url"] for r in records
    ]
    # placement by resources: only node 2 has "node2", only node 1 "node1"
    assert {r["node_id"] for r in by_name["counter"]} == {placed.node2.node_id}
    node1 = placed.cluster.head_node.node_id
    assert {r["node_id"] for r in by_name["policy_model"] + by_name["slow_agent"]} == {node1}
    # the replicas of one instance are spread over the nodes
    assert len({r["node_id"] for r in by_name["slow"]}) == 2


def test_secrets_are_not_actor_arguments_or_in_the_logs(placed: Placed) -> None:
    """What Ray's dashboard and state API show of an actor come from the GCS actor table: neither the token
    nor the model API key is in it (the actors' only arguments are two paths), nor in Ray's own logs of
    the session (GCS, raylets, workers' stdout/stderr), nor in ours."""
    from ray._private.state import state as global_state

    ray.init(address=placed.cluster.address, namespace="rg-test-inspect", log_to_driver=False)
    try:
        table = global_state._connect_and_get_accessor().get_actor_table(None, None)
        described = orjson.dumps(global_state.actor_table(None), default=str)
    finally:
        ray.shutdown()
    assert len(table) >= 10 and b"ServerActor" in described
    raw = b"".join(table) + described
    secrets = (TOKEN.encode(), b"sk-ray-test-KEY-77")
    assert not any(secret in raw for secret in secrets)
    session_logs = Path(placed.cluster.head_node.get_session_dir_path()) / "logs"
    for folder in (session_logs, placed.workdir / "logs"):
        files = [p for p in folder.rglob("*") if p.is_file() and p.parent.name != ".specs"]
        assert files
        for path in files:
            data = path.read_bytes()
            assert not any(secret in data for secret in secrets), path
    spec_dir = placed.workdir / "logs" / ".specs"
    assert oct(spec_dir.stat().st_mode & 0o777) == "0o700"
    assert all(oct(p.stat().st_mode & 0o777) == "0o600" for p in spec_dir.iterdir())


def test_load_is_spread_over_the_replicas_of_both_nodes(placed: Placed) -> None:
    rows = _rows(placed.workdir / "spread.jsonl", 160)
    run = placed.collect(rows, "slow_agent", "spread/rollouts.jsonl", concurrency=8)
    assert run.finish(timeout=300) == 0, run.text
    rollouts = jsonl_rows(placed.workdir / "spread" / "rollouts.jsonl")
    assert sorted(row_key(r) for r in rollouts) == [(t, 0) for t in range(160)]
    served = collections.Counter(r["served_by"] for r in rollouts)
    assert len(served) == 4, served
    assert min(served.values()) >= 160 // 4 // 2, served  # least-outstanding keeps them near even


def test_a_session_stays_on_its_replica_across_the_cluster(placed: Placed) -> None:
    rows = _rows(placed.workdir / "counter.jsonl", 40, counter=True)
    run = placed.collect(rows, "counter_agent", "counter/rollouts.jsonl")
    assert run.finish(timeout=300) == 0, run.text
    rollouts = jsonl_rows(placed.workdir / "counter" / "rollouts.jsonl")
    assert sorted(row_key(r) for r in rollouts) == [(t, 0) for t in range(40)]
    assert [r["reward"] for r in rollouts] == [1.0] * 40  # a moved session would read 0 → reward 0


SERVED = """\
ray: {{address: "{address}"}}
policy_model:
  responses_api_models:
    openai_model:
      openai_base_url: {upstream}/v1
      openai_api_key: sk-ray-test-KEY-77
      openai_model: stub
slow:
  resources_servers:
    tests.stubs.slow_env:SlowVerifyServer:
      replicas: 2
      verify_delay_s: 0.01
slow_agent:
  responses_api_agents:
    simple_agent:
      resources_server: {{type: resources_servers, name: slow}}
      model_server: {{type: responses_api_models, name: policy_model}}
"""


def test_a_ray_block_places_the_servers_of_a_serving_run(
    placed: Placed, upstream: ThreadedServer, tmp_path: Path
) -> None:
    """``gym eval run`` without ``--no-serve``: the config's ``ray:`` block places its servers on the cluster
    for the run (URLs learnt after placement), and they are gone afterwards."""
    (tmp_path / "stack.yaml").write_text(SERVED.format(address=placed.cluster.address, upstream=upstream.url))
    (tmp_path / "env.yaml").write_text(f"auth_token: {TOKEN}\n")
    rows = _rows(tmp_path / "rows.jsonl", 40)
    before = {r["name"] for r in placed.records()}
    run = GymProcess(
        ["eval", "run", "--config", "stack.yaml", "--input", str(rows), "--agent", "slow_agent",
         "--output", "out/rollouts.jsonl"],
        cwd=tmp_path, marker=placed.marker, env=placed.env_vars,
    )  # fmt: skip
    assert run.finish(timeout=300) == 0, run.text
    assert "on node" in run.text, run.text
    rollouts = jsonl_rows(tmp_path / "out" / "rollouts.jsonl")
    assert sorted(row_key(r) for r in rollouts) == [(t, 0) for t in range(40)]
    assert len({r["served_by"] for r in rollouts}) == 2
    assert (tmp_path / "out" / "logs" / "slow.log").exists()
    assert not (tmp_path / "out" / "logs" / ".specs").exists()  # the spec files (secrets) are removed
    assert {r["name"] for r in placed.records()} == before  # the other stack is untouched


def test_losing_a_node_mid_run_costs_only_its_in_flight_rollouts(placed: Placed) -> None:
    """Kill node 2's raylet while 300 rollouts run: the run completes on node 1, every key exactly once."""
    rows = _rows(placed.workdir / "loss.jsonl", 300)
    run = placed.collect(rows, "slow_agent", "loss/rollouts.jsonl", concurrency=8)
    out = placed.workdir / "loss" / "rollouts.jsonl"
    assert poll(lambda: len(jsonl_rows(out)) >= 40, timeout=180), run.text
    placed.node2.kill_raylet()
    assert run.finish(timeout=400) == 0, run.text
    assert not jsonl_rows(placed.workdir / "loss" / "rollouts_failures.jsonl"), run.text
    rollouts = jsonl_rows(out)
    assert sorted(row_key(r) for r in rollouts) == [(t, 0) for t in range(300)]
    assert placed.env.running, placed.env.text  # the stack serves on
    # Ray restarts the replicas node 2 held on node 1 (their custom resource aside: counter stays pending)
    node1 = placed.cluster.head_node.node_id

    def slow_back_on_node1() -> bool:
        slow = [r for r in placed.records() if r["name"] == "slow"]
        return all(r["status"] == "ready" and r["node_id"] == node1 for r in slow) and any(
            r["restarts"] >= 1 for r in slow
        )

    assert poll(slow_back_on_node1, timeout=120, interval=0.5), placed.records()

    def counter_pending() -> bool:  # its record turns from ready to starting once the death is seen
        return {r["status"] for r in placed.records() if r["name"] == "counter"} == {"starting"}

    assert poll(counter_pending, timeout=60, interval=0.5), placed.records()


def test_ray_without_the_shared_token_is_refused(tmp_path: Path, placed: Placed) -> None:
    (tmp_path / "stack.yaml").write_text(STACK.format(upstream="http://127.0.0.1:9"))
    gym = placed.start_other(tmp_path)
    assert gym.finish(timeout=120) == 1, gym.text
    assert "auth_token: placing the servers on Ray" in gym.text, gym.text
    assert "ready" not in gym.text


def test_an_instance_no_node_can_take_is_named_before_anything_starts(tmp_path: Path, placed: Placed) -> None:
    stack = STACK.format(upstream="http://127.0.0.1:9")
    stack = stack.replace("{node2: 0.1}, num_cpus: 0}", "{node2: 0.1}, num_cpus: 0, num_gpus: 1}")
    assert "num_gpus: 1" in stack
    (tmp_path / "stack.yaml").write_text(stack)
    (tmp_path / "env.yaml").write_text(f"auth_token: {TOKEN}\n")
    gym = placed.start_other(tmp_path)
    assert gym.finish(timeout=120) == 1, gym.text
    assert "server 'counter' cannot be placed: no node of the Ray cluster offers" in gym.text, gym.text
    assert "'GPU': 1" in gym.text and "ready" not in gym.text
