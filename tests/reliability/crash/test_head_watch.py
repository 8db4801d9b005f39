""":class:`rewardgym.collect.watch.HeadWatch` against a real HTTP head registry stub whose answers we set."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from aiohttp import web

from rewardgym.collect.watch import HeadWatch


@dataclass
class FakeHead:
    records: list[dict[str, Any]] = field(default_factory=list)
    health: dict[str, Any] = field(default_factory=lambda: {"status": "ok", "servers": []})
    runner: web.AppRunner | None = None
    url: str = ""
    hits: dict[str, int] = field(default_factory=dict)

    async def start(self) -> None:
        async def instances(_r: web.Request) -> web.Response:
            self.hits["instances"] = self.hits.get("instances", 0) + 1
            return web.Response(body=orjson.dumps(self.records), content_type="application/json")

        async def health(_r: web.Request) -> web.Response:
            self.hits["health"] = self.hits.get("health", 0) + 1
            return web.Response(body=orjson.dumps(self.health), content_type="application/json")

        app = web.Application()
        app.router.add_get("/server_instances", instances)
        app.router.add_get("/health", health)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}"

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None


def record(name: str, status: str = "ready", exit_code: int | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "resources_servers",
        "url": "http://x",
        "status": status,
        "exit_code": exit_code,
    }


@pytest.fixture
async def head() -> AsyncIterator[FakeHead]:
    fake = FakeHead(records=[record("mcqa"), record("agent")])
    await fake.start()
    yield fake
    await fake.stop()


async def wait_until(condition: Any, timeout: float = 5.0) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


async def test_healthy_stack_is_not_a_death(head: FakeHead) -> None:
    deaths: list[str] = []
    head.health = {
        "status": "degraded",
        "servers": [{"name": "mcqa", "url": "http://x", "healthy": False, "error": "upstream_timeout"}],
    }
    async with HeadWatch(head.url, on_death=deaths.append, poll_s=0.02) as watch:
        assert await watch.healthy()  # a busy server (probe timeout) is not a dead one
        assert await wait_until(lambda: head.hits.get("instances", 0) >= 3)
    assert deaths == [] and watch.death is None


async def test_an_exited_server_is_named_once(head: FakeHead) -> None:
    deaths: list[str] = []
    async with HeadWatch(head.url, on_death=deaths.append, poll_s=0.02) as watch:
        head.records = [record("mcqa", "exited", -9), record("agent", "stopping")]
        assert await wait_until(lambda: watch.death is not None)
        assert not await watch.healthy()
    assert deaths == ["server 'mcqa' (resources_servers) exited (exit code -9)"]


async def test_an_alarm_probes_health_and_names_a_refusing_server(head: FakeHead) -> None:
    deaths: list[str] = []
    head.health = {
        "status": "degraded",
        "servers": [{"name": "agent", "url": "http://a", "healthy": False, "error": "upstream_unreachable"}],
    }
    async with HeadWatch(head.url, on_death=deaths.append, poll_s=30) as watch:
        watch.alarm()
        assert await wait_until(lambda: watch.death is not None)
    assert deaths == ["server 'agent' at http://a refuses connections"]
    assert head.hits["health"] >= 1


async def test_a_vanished_head_is_a_death(head: FakeHead) -> None:
    deaths: list[str] = []
    async with HeadWatch(head.url, on_death=deaths.append, poll_s=0.02) as watch:
        assert await wait_until(lambda: head.hits.get("instances", 0) >= 1)
        assert watch.death is None
        await head.stop()
        assert await wait_until(lambda: watch.death is not None)
    assert deaths == [
        f"the head registry at {head.url} refuses connections: its 'gym env start' has exited "
        "(its output names the server that died)"
    ]
