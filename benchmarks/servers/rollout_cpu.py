"""Benchmark: CPU per rollout of agent /run → RS /seed_session → model (pass-through) → stub → RS /verify.

Starts ``gym env start`` (openai_model in front of the stub upstream, the exact-match test environment,
simple_agent), drives ``--rollouts`` POST /run calls with ``--concurrency`` in flight, and reports wall-clock
throughput and the CPU time consumed by our server processes (agent + resources + model server; the stub and
the load generator are excluded) divided by the number of rollouts. Design goal: ≤ 2.5 ms CPU per rollout.

Usage: ``.venv/bin/python benchmarks/servers/rollout_cpu.py [--rollouts 2000] [--concurrency 32]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from startup import CONFIG, GYM, REPO, free_port, wait_http

ROW = {
    "responses_create_params": {"input": [{"role": "user", "content": "Which letter? A: x B: y"}]},
    "expected_answer": "B",
}


async def drive(url: str, rollouts: int, concurrency: int) -> float:
    body = orjson.dumps(ROW)
    sem = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar()) as session:

        async def one() -> None:
            async with sem, session.post(url, data=body, headers={"Content-Type": "application/json"}) as r:
                payload = await r.read()
                assert r.status == 200, payload[:300]

        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(rollouts)))
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "bench.yaml"
        config.write_text(CONFIG)
        stub_port, head = free_port(), free_port()
        stub = subprocess.Popen(
            [sys.executable, "-m", "tests.stubs.openai_stub", "--port", str(stub_port), "--no-record"],
            cwd=REPO,
        )
        wait_http(stub_port)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        command = [
            *GYM, "env", "start", "--config", str(config), "--model-url", f"http://127.0.0.1:{stub_port}/v1",
            "--model", "stub-model", "--model-api-key", "bench-key", "--log-dir", f"{tmp}/logs",
            f"++head_server.port={head}",
        ]  # fmt: skip
        gym = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
        try:
            assert gym.stdout is not None
            for line in gym.stdout:
                if line.startswith("All "):
                    break
            import urllib.request

            with urllib.request.urlopen(f"http://127.0.0.1:{head}/server_instances") as resp:
                instances = orjson.loads(resp.read())
            procs = {i["name"]: psutil.Process(i["pid"]) for i in instances}
            agent = next(i["url"] for i in instances if i["kind"] == "responses_api_agents")
            asyncio.run(drive(f"{agent}/run", 200, args.concurrency))  # warm-up
            before = {n: p.cpu_times() for n, p in procs.items()}
            wall = asyncio.run(drive(f"{agent}/run", args.rollouts, args.concurrency))
            after = {n: p.cpu_times() for n, p in procs.items()}
        finally:
            gym.send_signal(signal.SIGTERM)
            gym.wait(timeout=30)
            stub.terminate()
            stub.wait()
    rate = args.rollouts / wall
    print(f"{args.rollouts} rollouts, concurrency {args.concurrency}: {rate:.0f} rollouts/s (wall)")
    total = 0.0
    for name in procs:
        used = (after[name].user + after[name].system) - (before[name].user + before[name].system)
        total += used
        print(f"  {name:<22} {1000 * used / args.rollouts:.3f} ms CPU / rollout")
    print(f"  {'all our servers':<22} {1000 * total / args.rollouts:.3f} ms CPU / rollout (goal ≤ 2.5)")


if __name__ == "__main__":
    main()
