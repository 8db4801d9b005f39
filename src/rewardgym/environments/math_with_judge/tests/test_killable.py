"""The killable fork worker: values come back, overruns are killed, crashes and errors are classified."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator

import psutil
import pytest
import pytest_asyncio

from rewardgym.environments.math_with_judge.killable import ForkWorker
from rewardgym.errors import ServerError

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def worker() -> AsyncIterator[ForkWorker]:
    async with ForkWorker() as shared:
        yield shared


async def _gone(pid: int, deadline_s: float = 10.0) -> bool:
    """Poll until ``pid`` no longer names a live process, up to ``deadline_s`` seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    while loop.time() < end:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        await asyncio.sleep(0.02)
    return False


async def _has_child(pid: int, deadline_s: float = 10.0) -> bool:
    """Poll until process ``pid`` has forked a child (a job is running), up to ``deadline_s`` seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    while loop.time() < end:
        if psutil.Process(pid).children():
            return True
        await asyncio.sleep(0.02)
    return False


async def test_value_comes_back_from_a_separate_process(worker: ForkWorker) -> None:
    result = await worker.run(os.getpid, timeout_s=30.0)
    assert result.failure is None
    assert result.value == result.pid
    assert result.value not in (os.getpid(), worker.helper_pid)


async def test_overrun_is_killed_at_the_timeout(worker: ForkWorker) -> None:
    started = time.monotonic()
    result = await worker.run(time.sleep, (120,), timeout_s=0.5)
    assert result.failure == "timeout"
    assert result.value is None
    assert time.monotonic() - started < 10.0
    assert result.pid is not None
    assert await _gone(result.pid)


async def test_jobs_run_concurrently_and_the_loop_stays_free(worker: ForkWorker) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    started = time.monotonic()
    results = await asyncio.gather(*(worker.run(time.sleep, (1.0,), timeout_s=30.0) for _ in range(4)))
    elapsed = time.monotonic() - started
    task.cancel()
    assert [r.failure for r in results] == [None] * 4
    assert len({r.pid for r in results}) == 4
    assert elapsed < 3.5
    assert ticks >= 20


async def test_child_that_exits_without_a_result_is_a_crash(worker: ForkWorker) -> None:
    result = await worker.run(os._exit, (3,), timeout_s=30.0)
    assert (result.failure, result.value) == ("crashed", None)


async def test_exception_in_the_child_is_an_error_with_its_text(worker: ForkWorker) -> None:
    result = await worker.run(int, ("not a number",), timeout_s=30.0)
    assert result.failure == "error"
    assert result.detail.startswith("ValueError: invalid literal")


async def test_a_dead_helper_fails_pending_jobs_and_is_replaced() -> None:
    async with ForkWorker() as own:
        first = await own.run(os.getpid, timeout_s=30.0)
        helper = own.helper_pid
        assert first.failure is None
        assert helper is not None
        pending = asyncio.create_task(own.run(time.sleep, (60,), timeout_s=60.0))
        assert await _has_child(helper)
        os.kill(helper, signal.SIGKILL)
        lost = await asyncio.wait_for(pending, 30.0)
        assert lost.failure == "crashed"
        again = await own.run(os.getpid, timeout_s=30.0)
        assert again.failure is None
        assert own.helper_pid not in (None, helper)


async def test_closing_stops_the_helper() -> None:
    own = ForkWorker()
    await own.run(os.getpid, timeout_s=30.0)
    helper = own.helper_pid
    assert helper is not None
    await own.aclose()
    assert own.helper_pid is None
    assert await _gone(helper)


async def test_a_helper_that_cannot_import_its_preload_is_an_error() -> None:
    async with ForkWorker(preload=("rewardgym_no_such_module",)) as broken:
        with pytest.raises(ServerError, match="rewardgym_no_such_module"):
            await broken.run(os.getpid, timeout_s=30.0)
