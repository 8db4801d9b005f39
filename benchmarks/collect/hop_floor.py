"""The CPU floor of one HTTP hop: the stub upstream's answer vs our cheapest server route, same client.

Starts the stack of ``throughput.py`` (stub upstream; ``gym env start`` with mcqa + simple_agent +
openai_model), then sends N requests at concurrency C with our lean client
(:class:`rewardgym.http.h1pool.H1Pool`, in this process) to the stub's ``POST /v1/responses`` and to mcqa's
``GET /reverify_mode`` (no body, no validation: only the server framework, the gate and a new session's
cookie), alternately, and reports the CPU per request of each server and of the client.

    .venv/bin/python benchmarks/collect/hop_floor.py --requests 20000 --concurrency 64

A rollout of ``throughput.py`` makes 5 hops: collector → agent ``/run``; agent → mcqa ``/seed_session``,
→ model server ``/v1/responses``, → mcqa ``/verify``; model server → stub. Our processes hold 4 server ends
and 5 client ends, the stub 1 server end, so with no application work at all our CPU per rollout would be
``4 × server + 5 × client`` of this script's figures: the floor of the "ours ÷ stub" ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from pathlib import Path

import orjson
import psutil
import uvloop
from throughput import cpu_seconds, start_stack

from rewardgym.http.h1pool import H1Pool


async def hammer(url: str, method: str, body: bytes | None, requests: int, concurrency: int) -> None:
    pool = H1Pool(
        limit=concurrency, connect_timeout_s=5, read_timeout_s=30, total_timeout_s=60, max_reply_bytes=1 << 24
    )
    headers = {"Content-Type": "application/json"} if body else {}

    async def worker(share: int) -> None:
        for _ in range(share):
            reply = await pool.request(method, url, body, headers)
            if reply.status != 200:
                raise SystemExit(f"{url}: HTTP {reply.status}")

    await asyncio.gather(*(worker(requests // concurrency) for _ in range(concurrency)))
    await pool.close()


def load_options(description: str) -> argparse.Namespace:
    """``--requests``, ``--concurrency`` and ``--rounds`` (also those of ``local_hop.py``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    return parser.parse_args()


def main() -> None:
    args = load_options(__doc__.splitlines()[0])
    work = Path(tempfile.mkdtemp(prefix="rg-floor-"))
    stack = start_stack(work)
    stub, servers, stub_port, records = stack.stub, stack.servers, stack.stub_port, stack.records
    mcqa = next(r for r in records if r["name"] == "mcqa")
    mcqa_url = mcqa.get("url") or f"http://{mcqa['host']}:{mcqa['port']}"
    targets = [
        ("stub POST /v1/responses", stub.pid, f"http://127.0.0.1:{stub_port}/v1/responses", "POST"),
        ("mcqa GET /reverify_mode", mcqa["pid"], f"{mcqa_url}/reverify_mode", "GET"),
    ]
    body = orjson.dumps({"model": "stub", "input": "Which letter?"})
    me = psutil.Process()
    done = args.requests // args.concurrency * args.concurrency
    try:
        for _ in range(args.rounds):
            for name, pid, url, method in targets:
                server = psutil.Process(pid)
                server_before, client_before = cpu_seconds(server), cpu_seconds(me)
                uvloop.run(hammer(url, method, body if method == "POST" else None, done, args.concurrency))
                server_ms = 1000 * (cpu_seconds(server) - server_before) / done
                client_ms = 1000 * (cpu_seconds(me) - client_before) / done
                print(f"{name}: server {server_ms:.3f} ms/request, client {client_ms:.3f} ms/request")
    finally:
        servers.terminate()
        servers.wait(timeout=30)
        stub.terminate()
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
