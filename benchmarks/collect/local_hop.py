"""CPU of one in-process hop: the lean client to a server app hosted by this very process (no socket).

Hosts one real mcqa server app (:mod:`rewardgym.http.local`, as a colocated stack does) and sends N requests
at concurrency C through :class:`rewardgym.http.client.HttpClient`, then prints the process CPU per request:
``GET /reverify_mode`` (the framework, the gate and a new session's cookie only) and ``POST /seed_session``
with a row of mcqa's example data (plus the seed route's own work). Both ends of the hop are in this process,
so the figure is client + server.

    .venv/bin/python benchmarks/collect/local_hop.py --requests 20000 --concurrency 64 --rounds 3

Compare checkouts with ``PYTHONPATH=<other checkout>/src`` in front; the VM's speed drifts, so alternate the
runs and compare medians.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import time
from pathlib import Path

import uvloop
from hop_floor import load_options

from rewardgym.environments.mcqa.app import MCQAServer
from rewardgym.http import local
from rewardgym.http.client import HttpClient
from rewardgym.http.config import HttpClientConfig

ROW = (
    Path(__file__).resolve().parents[2] / "src/rewardgym/environments/mcqa/data/example.jsonl"
).read_bytes()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def measure(route: str, requests: int, concurrency: int) -> float:
    """Process CPU seconds per request of ``route`` (after a warm-up of 10 requests per worker)."""
    port = closed_port()
    local.host("127.0.0.1", port, MCQAServer({"name": "mcqa", "host": "127.0.0.1", "port": port}).build_app())
    base, row = f"http://127.0.0.1:{port}", ROW.splitlines()[0]
    async with HttpClient(HttpClientConfig(max_attempts=1)) as client:

        async def worker(count: int) -> None:
            for _ in range(count):
                if route == "seed":
                    reply = await client.post(f"{base}/seed_session", data=row)
                else:
                    reply = await client.get(f"{base}/reverify_mode")
                if reply.status != 200:
                    raise SystemExit(f"{route}: HTTP {reply.status}")

        await asyncio.gather(*(worker(10) for _ in range(concurrency)))
        started = time.process_time()
        await asyncio.gather(*(worker(requests // concurrency) for _ in range(concurrency)))
        spent = time.process_time() - started
    local.unhost("127.0.0.1", port)
    return spent / (requests // concurrency * concurrency)


def main() -> None:
    args = load_options(__doc__.splitlines()[0])
    for route in ("get", "seed"):
        runs = [uvloop.run(measure(route, args.requests, args.concurrency)) for _ in range(args.rounds)]
        shown = " · ".join(f"{run * 1e6:.1f}" for run in runs)
        print(f"{route:4s}: {shown} µs CPU per request (median {statistics.median(runs) * 1e6:.1f})")


if __name__ == "__main__":
    main()
