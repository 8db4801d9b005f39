"""One collection per output at a time (a real second process holds the lock), and kill -9 leftovers."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from rewardgym.collect.materialize import MaterializeOptions
from rewardgym.collect.outputs import RunOutputs
from rewardgym.collect.runlock import lock_path
from rewardgym.collect.runner import run_collection
from rewardgym.collect.settings import CollectSettings
from rewardgym.errors import UsageError
from tests.collect.agent_stub import StubAgent

HOLD = """
import sys
from pathlib import Path
from rewardgym.collect.outputs import RunOutputs
from rewardgym.collect.runlock import run_lock
with run_lock(RunOutputs(Path(sys.argv[1]))):
    print("locked", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def output(tmp_path: Path) -> Path:
    return tmp_path / "out" / "rollouts.jsonl"


@pytest.fixture
def holder(output: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the run lock of ``output`` until its stdin closes."""
    output.parent.mkdir(parents=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(output)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def settings_for(tmp_path: Path, output: Path, **kwargs: object) -> CollectSettings:
    source = tmp_path / "in.jsonl"
    source.write_bytes(
        orjson.dumps({"responses_create_params": {"input": "q"}, "stub": {"reward": 1.0}}) + b"\n"
    )
    return CollectSettings(
        output=output,
        input=source,
        materialize=MaterializeOptions(agent_name="agent", num_repeats=2),
        concurrency=2,
        rollout_timeout_s=5.0,
        live_progress=False,
        disable_aggregation=True,
        **kwargs,  # type: ignore[arg-type]
    )


async def test_a_second_run_on_the_same_output_is_refused_and_touches_nothing(
    tmp_path: Path, output: Path, agent: StubAgent, holder: subprocess.Popen[str]
) -> None:
    earlier = b'{"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1.0}\n'
    output.write_bytes(earlier)
    with pytest.raises(
        UsageError, match=rf"another collection \(pid {holder.pid}\) is writing .*rollouts\.jsonl"
    ):
        await run_collection(settings_for(tmp_path, output), {"agent": agent.url}, out=io.StringIO())
    assert output.read_bytes() == earlier  # the running collection's file was not cleared
    assert not RunOutputs(output).materialized.exists()
    assert agent.attempts == {}

    holder.communicate("")  # the other run ends: its lock goes with it
    summary = await run_collection(settings_for(tmp_path, output), {"agent": agent.url}, out=io.StringIO())
    assert summary.stats.succeeded == 2
    assert not lock_path(RunOutputs(output)).exists()  # a run that ends removes its lock file


async def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path, output: Path, agent: StubAgent) -> None:
    output.parent.mkdir(parents=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(output)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"locked"
    proc.kill()  # kill -9: no cleanup code runs
    proc.wait()
    assert lock_path(RunOutputs(output)).exists()
    summary = await run_collection(settings_for(tmp_path, output), {"agent": agent.url}, out=io.StringIO())
    assert summary.stats.succeeded == 2


async def test_leftover_temp_files_of_a_killed_write_are_removed(
    tmp_path: Path, output: Path, agent: StubAgent
) -> None:
    output.parent.mkdir(parents=True)
    outputs = RunOutputs(output)
    leftovers = [
        output.parent / f".{outputs.materialized.name}.k1ll3d.tmp",
        output.parent / f".{outputs.aggregate_metrics.name}.x.tmp",
    ]
    unrelated = output.parent / ".other.jsonl.abc.tmp"
    for path in [*leftovers, unrelated]:
        path.write_bytes(b"half a file")
    await run_collection(settings_for(tmp_path, output), {"agent": agent.url}, out=io.StringIO())
    assert not any(path.exists() for path in leftovers)
    assert unrelated.exists()  # not ours: left alone
