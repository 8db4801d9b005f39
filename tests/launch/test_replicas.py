"""Replicas on one machine: ``replicas: N`` launches N processes, the head registry lists them all, and our
clients spread calls over them, keep a stateful session on its replica and stop sending to a dead one.

Real processes throughout: ``gym env start`` / ``gym eval run`` with the scripted OpenAI stub as upstream.
"""

from __future__ import annotations

import collections
import signal
from collections.abc import Iterator
from pathlib import Path

import orjson
import psutil
import pytest

from rewardgym.errors import ConfigError
from rewardgym.http.balancer import ReplicaDown, Replicas, Router
from rewardgym.launch.binding import check_bind
from rewardgym.launch.serve import ThreadedServer
from tests.stubs.openai_stub import StubState, start_stub
from tests.stubs.processes import (
    GymProcess,
    get_json,
    jsonl_rows,
    kill_marked,
    new_marker,
    no_marked_processes,
    poll,
    row_key,
    start_env,
)

POLICY = """\
policy_model:
  responses_api_models:
    openai_model:
      openai_base_url: {upstream}/v1
      openai_api_key: sk-test
      openai_model: stub
"""

SESSION_STACK = (
    POLICY
    + """\
counter:
  resources_servers:
    example_session_state_mgmt:
      replicas: 2
counter_agent:
  responses_api_agents:
    simple_agent:
      replicas: 2
      resources_server: {{type: resources_servers, name: counter}}
      model_server: {{type: responses_api_models, name: policy_model}}
"""
)

SLOW_STACK = (
    POLICY
    + """\
slow:
  resources_servers:
    tests.stubs.slow_env:SlowVerifyServer:
      replicas: 3
      verify_delay_s: 0.02
      verify_concurrency: 2
slow_agent:
  responses_api_agents:
    simple_agent:
      resources_server: {{type: resources_servers, name: slow}}
      model_server: {{type: responses_api_models, name: policy_model}}
"""
)


@pytest.fixture
def counter_upstream() -> Iterator[ThreadedServer]:
    """The model calls ``increment_counter`` by 3 once, then answers."""
    state = StubState(
        mode="tool_then_answer", tool_name="increment_counter", tool_args='{"count": 3}', text="ok"
    )
    runner, app = start_stub(state)
    try:
        yield runner
    finally:
        app.released = True
        runner.stop()


@pytest.fixture
def answer_upstream() -> Iterator[ThreadedServer]:
    runner, app = start_stub(StubState(text="done", record=False))
    try:
        yield runner
    finally:
        app.released = True
        runner.stop()


def _tools() -> list[dict[str, object]]:
    params = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}
    return [{"type": "function", "name": "increment_counter", "parameters": params, "strict": False}]


def _counter_rows(path: Path, count: int) -> Path:
    rows = [
        {
            "responses_create_params": {
                "input": [{"role": "user", "content": f"add 3 to {i}"}],
                "tools": _tools(),
            },
            "initial_count": i,
            "expected_count": i + 3,
        }
        for i in range(count)
    ]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def _plain_rows(path: Path, count: int) -> Path:
    rows = [{"responses_create_params": {"input": f"question {i}"}} for i in range(count)]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


# ------------------------------------------------------------------------------------ the balancer
def test_least_outstanding_then_in_turn() -> None:
    group = Replicas(["http://a:1", "http://b:2", "http://c:3"])
    first = [group.acquire() for _ in range(3)]
    assert sorted(first) == ["http://a:1", "http://b:2", "http://c:3"]  # one each while all are busy
    group.release("http://b:2")
    assert group.acquire() == "http://b:2"  # the only one with nothing outstanding


def test_sticky_session_never_moves_and_a_stateless_one_does() -> None:
    sticky = Replicas(["http://a:1", "http://b:2"], sticky=True)
    sticky.bind({"Env___x": "cookie-1"}, "http://b:2")
    assert all(sticky.pick(["Env___x=cookie-1"]) == "http://b:2" for _ in range(5))
    sticky.mark_down("http://b:2")
    with pytest.raises(ReplicaDown):
        sticky.pick(["Env___x=cookie-1"])
    assert sticky.pick() == "http://a:1"  # a new session goes to the live replica
    loose = Replicas(["http://a:1", "http://b:2"])
    loose.bind({"Model___m": "c"}, "http://b:2")
    loose.mark_down("http://b:2")
    assert loose.pick(["Model___m=c"]) == "http://a:1"


def test_a_replica_marked_down_comes_back_after_its_pause() -> None:
    group = Replicas(["http://a:1", "http://b:2"], down_s=0.0)
    group.mark_down("http://a:1")
    assert group.is_up("http://a:1")  # a zero pause: the next call is the probe
    group.mark_up("http://a:1")
    slow = Replicas(["http://a:1", "http://b:2"], down_s=60.0)
    slow.mark_down("http://a:1")
    assert {slow.pick() for _ in range(4)} == {"http://b:2"}
    slow.mark_down("http://b:2")
    assert slow.pick() == "http://a:1"  # all down: the one back first


def test_router_maps_the_first_replica_url_to_the_group() -> None:
    router = Router()
    router.add(["http://127.0.0.1:1200", "http://127.0.0.1:1201"])
    found = router.route("http://127.0.0.1:1200/seed_session")
    assert found is not None and found[1] == "/seed_session"
    assert router.route("http://127.0.0.1:12001/seed_session") is None


def test_network_binding_needs_a_cluster_and_the_token() -> None:
    check_bind("env", "127.0.0.1", network_bind=False, token=None)
    with pytest.raises(ConfigError, match=r"env\.host: 0\.0\.0\.0 is not a loopback address"):
        check_bind("env", "0.0.0.0", network_bind=False, token="t")
    with pytest.raises(ConfigError, match="without the shared auth token"):
        check_bind("env", "10.1.2.3", network_bind=True, token=None)
    check_bind("env", "10.1.2.3", network_bind=True, token="t")


# ------------------------------------------------------------------------------------ real processes
def test_a_session_stays_on_its_replica(tmp_path: Path, counter_upstream: ThreadedServer) -> None:
    """example_session_state_mgmt over 2 replicas (and 2 agents): the counter a tool call increments is the
    one verify reads, for every rollout — a session that moved would read another replica's state (0)."""
    (tmp_path / "stack.yaml").write_text(SESSION_STACK.format(upstream=counter_upstream.url))
    rows = _counter_rows(tmp_path / "rows.jsonl", 30)
    marker = new_marker()
    gym = GymProcess(
        ["eval", "run", "--config", "stack.yaml", "--input", str(rows), "--agent", "counter_agent",
         "--num-repeats", "2", "--concurrency", "8", "--output", "out/rollouts.jsonl"],
        cwd=tmp_path, marker=marker,
    )  # fmt: skip
    try:
        assert gym.finish(timeout=240) == 0, gym.text
    finally:
        kill_marked(marker)
    rollouts = jsonl_rows(tmp_path / "out" / "rollouts.jsonl")
    assert sorted(row_key(r) for r in rollouts) == [(t, r) for t in range(30) for r in range(2)]
    assert [r["reward"] for r in rollouts] == [1.0] * 60
    logs = {str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("counter.log")}
    assert logs == {"logs/counter.log", "logs/replica1/counter.log"}  # each replica logs apart


def test_load_is_spread_and_a_dead_replica_costs_nothing(
    tmp_path: Path, answer_upstream: ThreadedServer
) -> None:
    """3 replicas of a slow environment behind one agent: all three serve; SIGKILL one mid-run and the run
    still ends with every key exactly once, no failure, the rest served by the two left."""
    (tmp_path / "stack.yaml").write_text(SLOW_STACK.format(upstream=answer_upstream.url))
    rows = _plain_rows(tmp_path / "rows.jsonl", 400)
    marker = new_marker()
    env, head = start_env(
        ["--config", "stack.yaml", "--log-dir", str(tmp_path / "logs")], cwd=tmp_path, marker=marker
    )
    try:
        records = [r for r in get_json(f"{head}/server_instances") if r["name"] == "slow"]
        assert sorted(r["replica"] for r in records) == [0, 1, 2]
        assert len({r["url"] for r in records}) == 3 and all(r["replicas"] == 3 for r in records)
        run = GymProcess(
            ["eval", "run", "--no-serve", "--head-url", head, "--input", str(rows), "--agent", "slow_agent",
             "--concurrency", "12", "--output", "out/rollouts.jsonl"],
            cwd=tmp_path, marker=marker,
        )  # fmt: skip
        out = tmp_path / "out" / "rollouts.jsonl"
        assert poll(lambda: len(jsonl_rows(out)) >= 60, timeout=120), run.text
        victim = next(r for r in records if r["replica"] == 1)
        psutil.Process(victim["pid"]).send_signal(signal.SIGKILL)
        assert run.finish(timeout=240) == 0, run.text
        rollouts = jsonl_rows(out)
        assert sorted(row_key(r) for r in rollouts) == [(t, 0) for t in range(400)]
        assert not jsonl_rows(tmp_path / "out" / "rollouts_failures.jsonl")
        served = collections.Counter(r["served_by"].rsplit(":", 1)[1] for r in rollouts)
        pids = {str(r["pid"]) for r in records}
        assert set(served) == pids, served  # every replica served, the killed one before it died
        survivors = [served[str(r["pid"])] for r in records if r["replica"] != 1]
        assert min(survivors) > 60, served  # the two left share the rest
        assert env.running, env.text  # one replica lost does not stop the stack
        statuses = {
            r["replica"]: r["status"] for r in get_json(f"{head}/server_instances") if r["name"] == "slow"
        }
        assert statuses[1] == "exited" and statuses[0] == statuses[2] == "ready"
    finally:
        env.signal(signal.SIGTERM)
        env.finish(timeout=30)
        kill_marked(marker)
    assert not no_marked_processes(marker)
