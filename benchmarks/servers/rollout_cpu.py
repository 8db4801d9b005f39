"""Benchmark: rollouts/s and CPU per rollout through the real stack, per process.

Path of one rollout: load generator → agent ``POST /run`` → resources ``/seed_session`` → model server
``/v1/responses`` (the ``openai_model`` pass-through) → stub upstream → resources ``/verify``.

Starts the stub upstream (``tests/stubs/openai_stub.py``) and ``gym env start`` (resources server +
``simple_agent`` + ``openai_model``), warms up, then drives ``--rollouts`` ``POST /run`` calls with
``--concurrency`` in flight from a lean aiohttp loop (one keep-alive connection per worker) and reports:

- wall-clock throughput (rollouts/s);
- CPU time (user + system) per rollout of each of our server processes (agent, resources, model server) and
  their sum — the number the design goal is about (≤ 2.5 ms) — plus, for context, the stub upstream and the
  load generator, which are not ours;
- the load average before and after (the machine is shared: compare runs made under similar load).

Every reply must be HTTP 200 with a numeric ``reward`` (the stub answers ``\\boxed{B}``; rewards are checked).
``--repeat N`` measures N times on the same stack and prints min/median.

Environments: ``--env exact`` (default; the exact-match test environment, mcqa-like) or ``--env mcqa`` (the
real mcqa environment on the reference example rows).

Usage: ``.venv/bin/python benchmarks/servers/rollout_cpu.py [--rollouts 20000] [--concurrency 256]
[--repeat 1] [--env exact|mcqa]`` from the repository root.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from startup import CONFIG, ENV, GYM, REPO, free_port, wait_http

EXACT_ROW = {
    "responses_create_params": {"input": [{"role": "user", "content": "Which letter? A: x B: y"}]},
    "expected_answer": "B",
}
MCQA_CONFIG = """\
policy_model:
  responses_api_models:
    openai_model:
      openai_base_url: ${policy_base_url}
      openai_api_key: ${policy_api_key}
      openai_model: ${policy_model_name}
"""
MCQA_ROWS = REPO / "src/rewardgym/environments/mcqa/data/example.jsonl"  # NeMo Gym's 5 mcqa rows


@dataclass
class Measurement:
    rollouts: int
    wall_s: float
    cpu_s: dict[str, float]
    driver_cpu_s: float
    rewards: float
    load_before: float
    load_after: float

    @property
    def rate(self) -> float:
        return self.rollouts / self.wall_s

    def ms(self, name: str) -> float:
        return 1000 * self.cpu_s[name] / self.rollouts


def cpu_of(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


async def drive(url: str, bodies: list[bytes], rollouts: int, concurrency: int) -> tuple[float, float, float]:
    """``rollouts`` POSTs with ``concurrency`` workers; (wall s, driver CPU s, sum of rewards)."""
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=0)
    headers = {"Content-Type": "application/json"}
    counter = itertools.count()
    rewards = 0.0
    async with aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar()) as session:

        async def worker() -> None:
            nonlocal rewards
            while (i := next(counter)) < rollouts:
                async with session.post(url, data=bodies[i % len(bodies)], headers=headers) as resp:
                    payload = await resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"/run answered {resp.status}: {payload[:300]!r}")
                reward = orjson.loads(payload).get("reward")
                if not isinstance(reward, int | float):
                    raise RuntimeError(f"/run reply without a numeric reward: {payload[:300]!r}")
                rewards += reward

        cpu0, wall0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - wall0, time.process_time() - cpu0, rewards


def measure(
    url: str, bodies: list[bytes], procs: dict[str, psutil.Process], rollouts: int, concurrency: int
) -> Measurement:
    load_before = os.getloadavg()[0]
    before = {name: cpu_of(p) for name, p in procs.items()}
    wall, driver_cpu, rewards = asyncio.run(drive(url, bodies, rollouts, concurrency))
    after = {name: cpu_of(p) for name, p in procs.items()}
    cpu = {name: after[name] - before[name] for name in procs}
    return Measurement(rollouts, wall, cpu, driver_cpu, rewards, load_before, os.getloadavg()[0])


def start_stack(tmp: Path, env: str, stub_port: int) -> tuple[subprocess.Popen[str], int]:
    config = tmp / "bench.yaml"
    head = free_port()
    extra: list[str] = []
    if env == "exact":
        config.write_text(CONFIG)
    else:
        config.write_text(MCQA_CONFIG)
        extra = ["--resources-server", "mcqa"]
    command = [
        *GYM, "env", "start", "--config", str(config), *extra,
        "--model-url", f"http://127.0.0.1:{stub_port}/v1", "--model", "stub-model",
        "--model-api-key", "bench-key", "--log-dir", str(tmp / "logs"), f"++head_server.port={head}",
    ]  # fmt: skip
    gym = subprocess.Popen(command, cwd=REPO, env=ENV, stdout=subprocess.PIPE, text=True)
    assert gym.stdout is not None
    for line in gym.stdout:
        if line.startswith("All "):
            return gym, head
    gym.wait()
    raise RuntimeError("gym env start failed")


def report(runs: list[Measurement], names: dict[str, str], concurrency: int) -> None:
    first = runs[0]
    print(f"{first.rollouts} rollouts × {len(runs)} run(s), concurrency {concurrency}")
    print("  load average (1 min) before/after: " + ", ".join(
        f"{r.load_before:.2f}/{r.load_after:.2f}" for r in runs))  # fmt: skip
    rates = [r.rate for r in runs]
    print(f"  throughput: {', '.join(f'{x:.0f}' for x in rates)} rollouts/s"
          f"  (max {max(rates):.0f}, median {statistics.median(rates):.0f}; goal ≥ 1000)")  # fmt: skip
    print("  CPU per rollout (ms), min / median over runs:")
    ours = [name for name, role in names.items() if role != "context"]
    for name, role in names.items():
        values = [r.ms(name) for r in runs]
        label = f"{name} ({role})"
        print(f"    {label:<34} {min(values):6.3f} / {statistics.median(values):6.3f}")
    totals = [sum(r.ms(n) for n in ours) for r in runs]
    print(f"    {'all our servers':<34} {min(totals):6.3f} / {statistics.median(totals):6.3f}   (goal ≤ 2.5)")
    drivers = [1000 * r.driver_cpu_s / r.rollouts for r in runs]
    print(f"    {'load generator (context)':<34} {min(drivers):6.3f} / {statistics.median(drivers):6.3f}")
    mean_reward = sum(r.rewards for r in runs) / sum(r.rollouts for r in runs)
    print(f"  mean reward {mean_reward:.3f} (every reply HTTP 200 with a numeric reward)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--env", choices=("exact", "mcqa"), default="exact")
    args = parser.parse_args()
    if args.env == "exact":
        bodies = [orjson.dumps(EXACT_ROW)]
    else:
        bodies = [orjson.dumps(orjson.loads(line)) for line in MCQA_ROWS.read_text().splitlines() if line]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        stub_port = free_port()
        stub = subprocess.Popen(
            [sys.executable, "-m", "tests.stubs.openai_stub", "--port", str(stub_port), "--no-record"],
            cwd=REPO,
            env=ENV,
        )
        gym: subprocess.Popen[str] | None = None
        try:
            wait_http(stub_port)
            gym, head = start_stack(tmp, args.env, stub_port)
            with urllib.request.urlopen(f"http://127.0.0.1:{head}/server_instances") as resp:
                instances: list[dict[str, Any]] = orjson.loads(resp.read())
            kinds = {"responses_api_agents": "agent", "resources_servers": "resources",
                     "responses_api_models": "model server"}  # fmt: skip
            names = {i["name"]: kinds[i["kind"]] for i in instances}
            procs = {i["name"]: psutil.Process(i["pid"]) for i in instances}
            names["stub upstream"] = "context"
            procs["stub upstream"] = psutil.Process(stub.pid)
            agent = next(i["url"] for i in instances if i["kind"] == "responses_api_agents")
            asyncio.run(drive(f"{agent}/run", bodies, args.warmup, args.concurrency))
            runs = [
                measure(f"{agent}/run", bodies, procs, args.rollouts, args.concurrency)
                for _ in range(args.repeat)
            ]
        finally:
            if gym is not None:
                gym.send_signal(signal.SIGTERM)
                gym.wait(timeout=30)
            stub.terminate()
            stub.wait()
    report(runs, names, args.concurrency)


if __name__ == "__main__":
    main()
