"""After resumes, the rollouts and failures files still partition the keys they hold.

A key that failed and later succeeded (``--resume --retry-failed``, or a higher ``++max_attempts``) leaves
the failures file at the end of that run; if the run was killed before it could tidy, the next resume
does it first. Real HTTP stub agent (:mod:`tests.collect.agent_stub`), in-process collector.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson

from rewardgym.collect.failures import RetryPolicy
from rewardgym.collect.materialize import MaterializeOptions
from rewardgym.collect.runner import run_collection
from rewardgym.collect.settings import CollectSettings
from tests.collect.agent_stub import StubAgent
from tests.stubs.processes import jsonl_rows, row_key

FAST = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.05)


def settings(tmp_path: Path, **kwargs: Any) -> CollectSettings:
    stubs = [{"fail": [500, 500, 500]}, {}, {"fail": [503, 503, 503]}]
    path = tmp_path / "in.jsonl"
    rows = [{"responses_create_params": {"input": f"q{i}"}, "stub": s} for i, s in enumerate(stubs)]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    values: dict[str, Any] = {
        "output": tmp_path / "out" / "rollouts.jsonl",
        "input": path,
        "materialize": MaterializeOptions(agent_name="agent"),
        "concurrency": 2,
        "retry": FAST,
        "rollout_timeout_s": 5.0,
        "live_progress": False,
        "disable_aggregation": True,
    }
    values.update(kwargs)
    return CollectSettings(**values)


def keys(path: Path) -> list[tuple[int, int]]:
    return [row_key(r) for r in jsonl_rows(path)]


async def test_recovered_keys_leave_the_failures_file(tmp_path: Path, agent: StubAgent) -> None:
    first = await run_collection(settings(tmp_path), {"agent": agent.url}, out=io.StringIO())
    assert keys(first.outputs.rollouts) == [(1, 0)]
    assert sorted(keys(first.outputs.failures)) == [(0, 0), (2, 0)]

    # The stub fails each key three times only: the fourth attempt (this resume) succeeds.
    again = await run_collection(
        settings(tmp_path, resume=True, retry_failed=True), {"agent": agent.url}, out=io.StringIO()
    )
    assert again.stats.succeeded == 2
    assert sorted(keys(again.outputs.rollouts)) == [(0, 0), (1, 0), (2, 0)]
    assert keys(again.outputs.failures) == []


async def test_a_resume_tidies_what_a_killed_run_could_not(tmp_path: Path, agent: StubAgent) -> None:
    first = await run_collection(settings(tmp_path), {"agent": agent.url}, out=io.StringIO())
    failures_before = first.outputs.failures.read_bytes()
    # As a run killed right after appending the recovered rollout (0, 0) would leave the files:
    recovered = {"reward": 1.0, "_ng_task_index": 0, "_ng_rollout_index": 0, "agent_ref": {"name": "agent"}}
    with open(first.outputs.rollouts, "ab") as handle:
        handle.write(orjson.dumps(recovered) + b"\n")
    assert sorted(keys(first.outputs.failures)) == [(0, 0), (2, 0)]

    resumed = await run_collection(settings(tmp_path, resume=True), {"agent": agent.url}, out=io.StringIO())
    assert resumed.stats.succeeded == 0  # (2, 0) used its 3 attempts; nothing else is pending
    assert keys(resumed.outputs.failures) == [(2, 0)]
    assert sorted(keys(resumed.outputs.rollouts)) == [(0, 0), (1, 0)]
    assert failures_before.count(b"\n") == 2
