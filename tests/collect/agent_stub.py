"""A real HTTP stub agent (aiohttp on 127.0.0.1) whose behaviour per rollout comes from the row itself.

A row's ``stub`` object says what ``/run`` does: ``{"fail": [500, 429, ...]}`` answers those statuses on the
first attempts and then succeeds; ``"retry_after"`` adds that header to 429s; ``"hang_first": n`` hangs the
first n attempts; ``"garbage": true`` answers non-JSON; ``"no_reward": true`` omits the reward;
``"reward"`` sets the reward (default 1.0); ``"delay_s"`` delays the answer. ``/aggregate_metrics`` echoes
counts and a mean; ``GET /server_instances`` answers like a head registry listing this stub as ``agent``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web


@dataclass
class StubAgent:
    attempts: dict[tuple[int, int], int] = field(default_factory=dict)
    attempt_times: dict[tuple[int, int], list[float]] = field(default_factory=dict)
    aggregate_bodies: list[dict[str, Any]] = field(default_factory=list)
    runner: web.AppRunner | None = None
    url: str = ""
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, request: web.Request) -> web.StreamResponse:
        row = orjson.loads(await request.read())
        key = (row["_ng_task_index"], row["_ng_rollout_index"])
        attempt = self.attempts.get(key, 0)
        self.attempts[key] = attempt + 1
        self.attempt_times.setdefault(key, []).append(time.monotonic())
        spec = row.get("stub") or {}
        if spec.get("delay_s"):
            await asyncio.sleep(spec["delay_s"])  # simulated work (not synchronisation)
        if attempt < spec.get("hang_first", 0):
            await self.release.wait()  # hang until the stub stops
            return web.Response(status=503)
        fails = spec.get("fail", [])
        if attempt < len(fails):
            headers = {}
            if fails[attempt] == 429 and "retry_after" in spec:
                headers["Retry-After"] = str(spec["retry_after"])
            return web.Response(status=fails[attempt], text='{"error": "injected"}', headers=headers)
        if spec.get("garbage"):
            return web.Response(status=200, text="<html>not json")
        result: dict[str, Any] = {"responses_create_params": row["responses_create_params"], "extra": "x"}
        if not spec.get("no_reward"):
            result["reward"] = spec.get("reward", 1.0)
        return web.Response(body=orjson.dumps(result), content_type="application/json")

    async def aggregate(self, request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        self.aggregate_bodies.append(body)
        rewards = [r["reward"] for r in body["verify_responses"]]
        metrics = {"mean/reward": sum(rewards) / len(rewards), "count": len(rewards)}
        payload = {"agent_metrics": metrics, "key_metrics": {"mean/reward": metrics["mean/reward"]}}
        return web.Response(body=orjson.dumps(payload), content_type="application/json")

    async def instances(self, request: web.Request) -> web.Response:
        """Answer like a head registry listing this stub as the agent ``agent``."""
        record = {"name": "agent", "kind": "responses_api_agents", "implementation": "stub", "url": self.url}
        return web.Response(body=orjson.dumps([record]), content_type="application/json")

    async def start(self) -> str:
        app = web.Application()
        app.router.add_get("/server_instances", self.instances)
        app.router.add_post("/run", self.run)
        app.router.add_post("/aggregate_metrics", self.aggregate)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        self.release.set()
        if self.runner is not None:
            await self.runner.cleanup()
