"""A stub agent process with bulky results, for killing ``gym eval run`` in the middle of writing a line.

``python -m tests.stubs.bulky_agent --port 0 --pad-bytes 1000000 --delay-ms 20`` prints
``bulky agent listening on http://127.0.0.1:<port>`` and serves:

- ``GET /server_instances``: a head-registry answer listing itself as the agent ``agent`` (so
  ``gym eval run --no-serve --head-url <its url>`` finds it);
- ``POST /run``: after ``delay-ms``, ``{"reward": <the key's reward>, "pad": "x" * pad_bytes, "echo": <the
  row's responses_create_params>}``. The reward is a function of the key only (:func:`expected_reward`), so
  a test can check every stored reward; the pad makes each rollouts line large enough that writing it takes
  many page copies, which a SIGKILL can interrupt (a torn line);
- ``POST /aggregate_metrics``: the count and mean reward.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from typing import Any

import orjson
from aiohttp import web

from tests.stubs.stub_process import StubProcess, launch_stub

READY_PREFIX = "bulky agent listening on "


def expected_reward(task_index: int, rollout_index: int) -> float:
    """The reward this agent gives a key."""
    return 1.0 if (task_index + rollout_index) % 3 == 0 else 0.0


def build_app(pad_bytes: int, delay_s: float) -> web.Application:
    pad = "x" * pad_bytes
    urls: dict[str, str] = {}

    async def instances(_request: web.Request) -> web.Response:
        record = {
            "name": "agent",
            "kind": "responses_api_agents",
            "implementation": "bulky",
            "url": urls["self"],
        }
        return web.Response(
            body=orjson.dumps([{**record, "status": "ready"}]), content_type="application/json"
        )

    async def run(request: web.Request) -> web.Response:
        row = orjson.loads(await request.read())
        if delay_s:
            await asyncio.sleep(delay_s)  # simulated work, not synchronisation
        result: dict[str, Any] = {
            "reward": expected_reward(row["_ng_task_index"], row["_ng_rollout_index"]),
            "echo": row.get("responses_create_params"),
            "pad": pad,
        }
        return web.Response(body=orjson.dumps(result), content_type="application/json")

    async def aggregate(request: web.Request) -> web.Response:
        rows = orjson.loads(await request.read())["verify_responses"]
        mean = sum(r["reward"] for r in rows) / max(1, len(rows))
        metrics = {"mean/reward": mean, "count": len(rows)}
        return web.Response(
            body=orjson.dumps({"agent_metrics": metrics, "key_metrics": metrics}),
            content_type="application/json",
        )

    app = web.Application(client_max_size=1 << 30)
    app.router.add_get("/server_instances", instances)
    app.router.add_post("/run", run)
    app.router.add_post("/aggregate_metrics", aggregate)
    app["urls"] = urls
    return app


async def serve(port: int, pad_bytes: int, delay_s: float) -> None:
    app = build_app(pad_bytes, delay_s)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    bound = int(runner.addresses[0][1])
    app["urls"]["self"] = f"http://127.0.0.1:{bound}"
    sys.stdout.write(f"{READY_PREFIX}http://127.0.0.1:{bound}\n")
    sys.stdout.flush()
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--pad-bytes", type=int, default=1_000_000)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.port, args.pad_bytes, args.delay_ms / 1000))


class BulkyAgent(StubProcess):
    """A running bulky agent process."""


def start_bulky_agent(*args: str, timeout_s: float = 30.0) -> BulkyAgent:
    """Start ``python -m tests.stubs.bulky_agent <args>`` on a free port and wait until it listens."""
    return BulkyAgent(*launch_stub("bulky_agent", READY_PREFIX, args, timeout_s=timeout_s))


if __name__ == "__main__":
    main()
