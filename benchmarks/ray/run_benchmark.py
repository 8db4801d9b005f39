"""Throughput of a slow-verify environment over 1, 2, 4, 8 replicas placed by Ray on two nodes.

Starts a two-node Ray cluster on this machine (``ray.cluster_utils.Cluster``, no dashboard), the scripted
OpenAI stub (its own process, instant answers) and, for each replica count N, ``gym env start --ray`` with
``tests.stubs.slow_env:SlowVerifyServer`` × N (verify = wait for a slot of ``--slots`` per replica, then
sleep ``--delay-ms``: the cost of an expensive verifier, so one replica does ``slots / delay`` verifies a
second whatever the machine), ``simple_agent`` × ``--agents`` and ``openai_model`` → stub; then
``gym eval run --no-serve`` over ``--seconds`` × the ideal rate rollouts at concurrency 4 × N × slots.

Reported per N: rollouts/s (the collector's own figure: collection only, no start-up), the linear ideal
from the 1-replica figure (N × r1) and the ratio, the time from launching ``gym env start --ray`` to
``All … servers ready`` (every replica answering), where the replicas ran, and the collector's CPU per
rollout (its whole process, start-up included: is the driver the bottleneck?).

    .venv/bin/python benchmarks/ray/run_benchmark.py                  # 1 2 4 8 replicas, 50 ms, 1 slot
    .venv/bin/python benchmarks/ray/run_benchmark.py --replicas 1 4 --seconds 5
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "rg-benchmark-token-not-a-secret-elsewhere"
RATE = re.compile(r"Collected (\d+)/(\d+) rollouts .* in ([\d.]+)s, ([\d.]+)/s")

STACK = """\
policy_model:
  responses_api_models:
    openai_model:
      openai_base_url: {upstream}/v1
      openai_api_key: sk-benchmark
      openai_model: stub
slow:
  resources_servers:
    tests.stubs.slow_env:SlowVerifyServer:
      replicas: {replicas}
      verify_delay_s: {delay}
      verify_concurrency: {slots}
slow_agent:
  responses_api_agents:
    simple_agent:
      replicas: {agents}
      resources_server: {{type: resources_servers, name: slow}}
      model_server: {{type: responses_api_models, name: policy_model}}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_line(proc: subprocess.Popen[str], text: str, timeout: float) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if text in line:
            return lines
    raise SystemExit("gym env start --ray did not become ready:\n" + "".join(lines))


def records(head: str) -> list[dict[str, object]]:
    request = urllib.request.Request(f"{head}/server_instances", headers={"X-Rewardgym-Token": TOKEN})
    with urllib.request.urlopen(request, timeout=10) as reply:
        return list(orjson.loads(reply.read()))


def one(
    args: argparse.Namespace, address: str, upstream: str, replicas: int, work: Path, env: dict[str, str]
) -> dict[str, object]:
    run_dir = work / f"r{replicas}"
    run_dir.mkdir()
    delay = args.delay_ms / 1000
    stack = STACK.format(
        upstream=upstream, replicas=replicas, delay=delay, slots=args.slots, agents=args.agents
    )
    (run_dir / "stack.yaml").write_text(stack)
    (run_dir / "env.yaml").write_text(f"auth_token: {TOKEN}\n")
    ideal_rate = replicas * args.slots / delay
    count = max(100, int(ideal_rate * args.seconds))
    (run_dir / "rows.jsonl").write_bytes(
        b"".join(orjson.dumps({"responses_create_params": {"input": f"q{i}"}}) + b"\n" for i in range(count))
    )
    head_port = free_port()
    started = time.monotonic()
    gym = subprocess.Popen(
        [sys.executable, "-m", "rewardgym", "env", "start", "--config", "stack.yaml", "--ray", address,
         "--log-dir", str(run_dir / "logs"), f"++head_server.port={head_port}"],
        cwd=run_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        wait_for_line(gym, "servers ready", timeout=600)
        ready_s = time.monotonic() - started
        head = f"http://127.0.0.1:{head_port}"
        nodes = collections.Counter(
            str(r["node_ip"]) + "/" + str(r["node_id"])[:6] for r in records(head) if r["name"] == "slow"
        )
        concurrency = 4 * replicas * args.slots
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        run = subprocess.run(
            [sys.executable, "-m", "rewardgym", "eval", "run", "--no-serve", "--head-url", head, "--input",
             "rows.jsonl", "--agent", "slow_agent", "--concurrency", str(concurrency),
             "--output", "out/r.jsonl"],
            cwd=run_dir, env=env, capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the collector's CPU: it is the only child
        collector_cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        if run.returncode != 0:
            raise SystemExit(f"collection failed:\n{run.stdout}\n{run.stderr}")
        rates = RATE.findall(run.stdout + run.stderr)
        done, total, seconds, _ = rates[-1]
        assert int(done) == int(total) == count, rates[-1]
        return {
            "replicas": replicas, "rollouts": count, "seconds": float(seconds),
            "rate": count / float(seconds), "ready_s": ready_s, "concurrency": concurrency,
            "nodes": dict(nodes), "collector_ms": 1000 * collector_cpu / count,
        }  # fmt: skip
    finally:
        gym.send_signal(signal.SIGTERM)
        try:
            gym.wait(timeout=60)
        except subprocess.TimeoutExpired:
            gym.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--delay-ms", type=float, default=50.0)
    parser.add_argument("--slots", type=int, default=1, help="verifies one replica runs at once")
    parser.add_argument("--agents", type=int, default=2, help="simple_agent replicas")
    parser.add_argument("--seconds", type=float, default=8.0, help="collection length at the ideal rate")
    args = parser.parse_args()

    from ray.cluster_utils import Cluster

    os.environ["PYTHONPATH"] = str(ROOT)  # the workers import tests.stubs.slow_env
    os.environ["RAY_memory_monitor_refresh_ms"] = "0"  # noqa: SIM112 - Ray spells it so
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("COLUMNS", None)
    cluster_started = time.monotonic()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    print(f"two-node Ray cluster up in {time.monotonic() - cluster_started:.1f} s ({cluster.address})")
    stub_port = free_port()
    stub = subprocess.Popen(
        [sys.executable, "-m", "tests.stubs.openai_stub", "--port", str(stub_port), "--text", "ok",
         "--no-record"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="rg-ray-bench-") as tmp:
            for replicas in args.replicas:
                result = one(args, cluster.address, f"http://127.0.0.1:{stub_port}", replicas, Path(tmp), env)
                results.append(result)
                print(
                    f"replicas {replicas}: {result['rate']:.1f} rollouts/s ({result['rollouts']} in "
                    f"{result['seconds']:.2f} s, concurrency {result['concurrency']}), ready in "
                    f"{result['ready_s']:.1f} s, replicas per node {result['nodes']}",
                    flush=True,
                )
    finally:
        stub.terminate()
        stub.wait()
        cluster.shutdown()  # type: ignore[no-untyped-call]
    base = results[0]["rate"] / results[0]["replicas"]  # type: ignore[operator]
    per_replica_ideal = args.slots / (args.delay_ms / 1000)
    print()
    print(
        f"verify {args.delay_ms:g} ms, {args.slots} slot(s) per replica: "
        f"at most {per_replica_ideal:.0f}/s per replica"
    )
    columns = ["replicas", "rollouts/s", "linear (N × 1-replica)", "ratio", "start → all healthy"]
    print("| " + " | ".join([*columns, "collector CPU/rollout"]) + " |")
    print("|---:|---:|---:|---:|---:|---:|")
    for result in results:
        ideal = base * result["replicas"]
        rate = float(result["rate"])  # type: ignore[arg-type]
        print(
            f"| {result['replicas']} | {rate:.1f} | {ideal:.1f} | {rate / ideal:.2f} | "
            f"{result['ready_s']:.1f} s | {result['collector_ms']:.2f} ms |"
        )


if __name__ == "__main__":
    main()
