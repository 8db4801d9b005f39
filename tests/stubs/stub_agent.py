"""The skeleton of a stub agent server (a real aiohttp process on 127.0.0.1): its own head registry
(``/server_instances`` lists just itself), ``/run`` answering with what the stub computes for a row after an
optional delay (the agent's simulated work), and ``/aggregate_metrics`` (mean reward and count). The bulky
and Bernoulli agents differ only in their ``/run`` result."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

RunResult = Callable[[dict[str, Any]], dict[str, Any]]


def build_agent_app(
    implementation: str, result_of: RunResult, delay_s: float, max_body: int
) -> web.Application:
    urls: dict[str, str] = {}

    async def instances(_request: web.Request) -> web.Response:
        record = {"name": "agent", "kind": "responses_api_agents", "implementation": implementation}
        body = [{**record, "url": urls["self"], "status": "ready"}]
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    async def run(request: web.Request) -> web.Response:
        row = orjson.loads(await request.read())
        if delay_s:
            await asyncio.sleep(delay_s)  # simulated work, not synchronisation
        return web.Response(body=orjson.dumps(result_of(row)), content_type="application/json")

    async def aggregate(request: web.Request) -> web.Response:
        rows = orjson.loads(await request.read())["verify_responses"]
        mean = sum(r["reward"] for r in rows) / max(1, len(rows))
        metrics = {"mean/reward": mean, "count": len(rows)}
        return web.Response(
            body=orjson.dumps({"agent_metrics": metrics, "key_metrics": metrics}),
            content_type="application/json",
        )

    app = web.Application(client_max_size=max_body)
    app.router.add_get("/server_instances", instances)
    app.router.add_post("/run", run)
    app.router.add_post("/aggregate_metrics", aggregate)
    app["urls"] = urls
    return app


async def serve_agent(app: web.Application, port: int, ready_prefix: str) -> None:
    """Serve ``app`` on 127.0.0.1 and print ``<ready_prefix><url>`` once it listens; run until killed."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    bound = int(runner.addresses[0][1])
    app["urls"]["self"] = f"http://127.0.0.1:{bound}"
    sys.stdout.write(f"{ready_prefix}http://127.0.0.1:{bound}\n")
    sys.stdout.flush()
    await asyncio.Event().wait()
