"""code_gen sandbox under cancellation: a verify whose caller goes away (a client disconnect, a timeout)
leaves no process, no lost slot and no unverified isolation, wherever the cancellation lands.

The first test is pure asyncio; the others run real confined children and need a root server (as in CI) to
find a run's processes by its dedicated uid.
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from rewardgym.environments.code_gen.sandbox import CodeSandbox, _to_the_end
from rewardgym.environments.code_gen.tests.helpers import (
    fenced,
    make_request,
    no_sandbox_processes_left,
    uid_processes,
)
from rewardgym.environments.code_gen.verifier import CodeGenConfig, verify

ROOT = os.geteuid() == 0


async def test_a_cancelled_caller_waits_for_the_clean_up_to_end() -> None:
    """The clean-up cut short at an await was how a slot got lost: the caller's cancellation lands while the
    clean-up waits, and must be raised only once the clean-up is through."""
    started, release = asyncio.Event(), asyncio.Event()
    steps: list[str] = []

    async def clean_up() -> None:
        started.set()
        await release.wait()
        steps.append("clean-up done")

    async def caller() -> None:
        try:
            await _to_the_end(clean_up())
        finally:
            steps.append("caller ends")

    task = asyncio.ensure_future(caller())
    await started.wait()
    task.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert steps == ["clean-up done", "caller ends"]


async def test_a_failing_clean_up_is_raised_to_the_caller() -> None:
    async def clean_up() -> None:
        await asyncio.sleep(0)
        raise OSError("cannot remove")

    with pytest.raises(OSError, match="cannot remove"):
        await _to_the_end(clean_up())


def _needs_uids(config: CodeGenConfig) -> None:
    if not ROOT or config.sandbox_uid_base is None:
        pytest.skip("finding the run's processes by uid needs a root server")


async def _until_a_sandbox_process_runs(config: CodeGenConfig) -> None:
    deadline = time.monotonic() + 60  # a guard against a hang, not a budget: load may slow the start
    while not uid_processes(config):  # another process: polled, with a bound
        assert time.monotonic() < deadline, "no sandbox process started"
        await asyncio.sleep(0.02)


async def test_cancelled_verify_kills_the_run(config: CodeGenConfig) -> None:
    _needs_uids(config)
    config = config.model_copy(update={"unit_test_timeout_secs": 30.0})
    sandbox = CodeSandbox(config)
    task = asyncio.ensure_future(
        verify(make_request(fenced("while True:\n    pass"), ["\n"], ["x"]), config, sandbox)
    )
    await _until_a_sandbox_process_runs(config)  # the self-test's child or the solution's
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await no_sandbox_processes_left(config)
    assert sandbox._slots.qsize() == config.max_concurrent_executions


async def test_a_cancelled_self_test_is_run_again(config: CodeGenConfig) -> None:
    _needs_uids(config)
    sandbox = CodeSandbox(config)
    slots = config.max_concurrent_executions
    task = asyncio.ensure_future(sandbox.isolation())
    deadline = time.monotonic() + 60  # a guard against a hang, not a budget: load may slow the start
    while sandbox._slots.qsize() == slots and not task.done():  # until the self-test's run has its slot
        assert time.monotonic() < deadline, "the self-test never started"
        await asyncio.sleep(0.001)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        assert sandbox._isolation is None  # cancelled before it reported: nothing is trusted yet
    assert sandbox._slots.qsize() == slots
    found = await sandbox.isolation()
    assert found.mode != "none", found.detail
    assert sandbox._slots.qsize() == slots
    assert await no_sandbox_processes_left(config)
