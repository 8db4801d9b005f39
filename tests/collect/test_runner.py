"""Collection end to end against a real stub agent over HTTP: retries, failure classes, resume."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from rewardgym.collect.failures import RetryPolicy
from rewardgym.collect.materialize import MaterializeOptions
from rewardgym.collect.runner import run_collection
from rewardgym.collect.settings import CollectSettings
from rewardgym.errors import UsageError
from tests.collect.agent_stub import StubAgent

FAST = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.05)


def _input(tmp_path: Path, stubs: list[dict[str, Any]]) -> Path:
    path = tmp_path / "in.jsonl"
    rows = [{"responses_create_params": {"input": f"q{i}"}, "stub": s} for i, s in enumerate(stubs)]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def _settings(tmp_path: Path, input_path: Path, **kwargs: Any) -> CollectSettings:
    defaults: dict[str, Any] = {
        "output": tmp_path / "out" / "rollouts.jsonl",
        "input": input_path,
        "materialize": MaterializeOptions(agent_name="agent", num_repeats=2),
        "concurrency": 4,
        "retry": FAST,
        "rollout_timeout_s": 5.0,
        "live_progress": False,
    }
    defaults.update(kwargs)
    return CollectSettings(**defaults)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


def _keys(rows: list[dict[str, Any]]) -> set[tuple[int, int]]:
    return {(r["_ng_task_index"], r["_ng_rollout_index"]) for r in rows}


async def test_clean_run_writes_every_rollout_stamped(tmp_path: Path, agent: StubAgent) -> None:
    settings = _settings(tmp_path, _input(tmp_path, [{"reward": 1.0}, {"reward": 0.0}]))
    summary = await run_collection(settings, {"agent": agent.url}, out=io.StringIO())
    rows = _lines(settings.output)
    assert _keys(rows) == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert all(r["agent_ref"] == {"name": "agent"} for r in rows)
    assert sorted(r["reward"] for r in rows) == [0.0, 0.0, 1.0, 1.0]
    assert summary.stats.succeeded == 4
    assert _lines(summary.outputs.failures) == []
    aggregate = orjson.loads(summary.outputs.aggregate_metrics.read_bytes())
    assert aggregate[0]["agent_ref"] == {"name": "agent"}
    assert aggregate[0]["agent_metrics"]["count"] == 4
    # The agent got rows stripped of the bulky parts.
    assert all("responses_create_params" not in r for r in agent.aggregate_bodies[0]["verify_responses"])


async def test_transient_failures_are_retried_in_place(tmp_path: Path, agent: StubAgent) -> None:
    settings = _settings(
        tmp_path, _input(tmp_path, [{"fail": [500, 503]}, {"fail": [429], "retry_after": 0}])
    )
    summary = await run_collection(settings, {"agent": agent.url}, out=io.StringIO())
    assert _keys(_lines(settings.output)) == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert summary.stats.retries == 2 * 2 + 2
    assert agent.attempts[(0, 0)] == 3


async def test_exhausted_and_permanent_failures_go_to_sidecar_never_to_rollouts(
    tmp_path: Path, agent: StubAgent
) -> None:
    stubs: list[dict[str, Any]] = [
        {"fail": [500, 500, 500]}, {"fail": [422]}, {"garbage": True}, {"no_reward": True}, {}
    ]  # fmt: skip
    settings = _settings(
        tmp_path, _input(tmp_path, stubs), materialize=MaterializeOptions(agent_name="agent")
    )
    summary = await run_collection(settings, {"agent": agent.url}, out=io.StringIO())
    rows = _lines(settings.output)
    failures = {(f["_ng_task_index"], f["_ng_rollout_index"]): f for f in _lines(summary.outputs.failures)}
    assert _keys(rows) == {(4, 0)}
    assert set(failures) == {(0, 0), (1, 0), (2, 0), (3, 0)}
    assert failures[(0, 0)]["_ng_failure_class"] == "http_5xx"
    assert failures[(0, 0)]["attempts"] == 3
    assert failures[(1, 0)]["_ng_failure_class"] == "invalid_request"
    assert failures[(1, 0)]["attempts"] == 1  # a 4xx is not retried
    assert failures[(1, 0)]["permanent"] is True
    assert failures[(2, 0)]["_ng_failure_class"] == "invalid_response"
    assert failures[(3, 0)]["_ng_failure_class"] == "invalid_response"
    assert all("reward" not in f for f in failures.values())


async def test_timeout_is_classified_and_retried(tmp_path: Path, agent: StubAgent) -> None:
    settings = _settings(
        tmp_path,
        _input(tmp_path, [{"hang_first": 1}]),
        materialize=MaterializeOptions(agent_name="agent"),
        rollout_timeout_s=0.3,
    )
    summary = await run_collection(settings, {"agent": agent.url}, out=io.StringIO())
    assert _keys(_lines(settings.output)) == {(0, 0)}
    assert summary.stats.retries == 1


async def test_retry_after_is_honoured(tmp_path: Path, agent: StubAgent) -> None:
    settings = _settings(
        tmp_path,
        _input(tmp_path, [{"fail": [429], "retry_after": 0.4}]),
        materialize=MaterializeOptions(agent_name="agent"),
        retry=RetryPolicy(max_attempts=2, base_delay_s=0.0, max_delay_s=5.0),
    )
    await run_collection(settings, {"agent": agent.url}, out=io.StringIO())
    first, second = agent.attempt_times[(0, 0)]
    assert second - first >= 0.4


async def test_fail_fast_stops_at_first_permanent_failure(tmp_path: Path, agent: StubAgent) -> None:
    stubs = [{"fail": [400]}] + [{}] * 30
    settings = _settings(
        tmp_path,
        _input(tmp_path, stubs),
        materialize=MaterializeOptions(agent_name="agent"),
        concurrency=1,
        fail_fast=True,
    )
    out = io.StringIO()
    summary = await run_collection(settings, {"agent": agent.url}, out=out)
    assert summary.stop_reason is not None and summary.stop_reason.startswith("fail_fast")
    assert len(_lines(settings.output)) < 30
    assert "--resume" in out.getvalue()


async def test_resume_runs_only_what_is_missing(tmp_path: Path, agent: StubAgent) -> None:
    stubs = [{}, {"fail": [500, 500, 500]}, {}]
    settings = _settings(tmp_path, _input(tmp_path, stubs))
    summary = await run_collection(settings, {"agent": agent.url}, out=io.StringIO())
    done = _lines(settings.output)
    assert len(done) == 4
    # Simulate a crash: drop one finished line and tear the last one mid-write.
    data = settings.output.read_bytes().splitlines(keepends=True)
    settings.output.write_bytes(b"".join(data[:2]) + data[2][:10])
    before = dict(agent.attempts)
    resumed = _settings(tmp_path, settings.input or Path(), resume=True)
    summary = await run_collection(resumed, {"agent": agent.url}, out=io.StringIO())
    rows = _lines(settings.output)
    assert _keys(rows) == {(0, 0), (0, 1), (2, 0), (2, 1)}
    assert len(rows) == 4  # no duplicates
    # Failed keys at the attempt cap are not re-run; only the two lost rollouts were.
    assert sum(agent.attempts.values()) - sum(before.values()) == 2
    assert summary.resumed_done == 2


async def test_resume_refuses_changed_input(tmp_path: Path, agent: StubAgent) -> None:
    settings = _settings(tmp_path, _input(tmp_path, [{}]))
    await run_collection(settings, {"agent": agent.url}, out=io.StringIO())
    assert settings.input is not None
    settings.input.write_bytes(
        settings.input.read_bytes() + b'{"responses_create_params": {"input": "new"}}\n'
    )
    with pytest.raises(UsageError, match=r"cannot resume: the run changed since it started \(input_sha256\)"):
        await run_collection(
            _settings(tmp_path, settings.input, resume=True), {"agent": agent.url}, out=io.StringIO()
        )


async def test_resume_without_previous_run(tmp_path: Path, agent: StubAgent) -> None:
    with pytest.raises(UsageError, match="cannot resume: no previous run found"):
        await run_collection(
            _settings(tmp_path, _input(tmp_path, [{}]), resume=True), {"agent": agent.url}, out=io.StringIO()
        )


async def test_unknown_agent_lists_available(tmp_path: Path, agent: StubAgent) -> None:
    settings = _settings(tmp_path, _input(tmp_path, [{}]), materialize=MaterializeOptions(agent_name="nope"))
    with pytest.raises(UsageError, match=r"'nope' but no such agent is running \(available: agent\)"):
        await run_collection(settings, {"agent": agent.url}, out=io.StringIO())


async def test_output_folder_that_is_a_file(tmp_path: Path, agent: StubAgent) -> None:
    (tmp_path / "blocker").write_text("x")
    settings = _settings(tmp_path, _input(tmp_path, [{}]), output=tmp_path / "blocker" / "rollouts.jsonl")
    with pytest.raises(UsageError, match="is a file, not a folder"):
        await run_collection(settings, {"agent": agent.url}, out=io.StringIO())


async def test_fresh_run_clears_stale_outputs_with_warning(tmp_path: Path, agent: StubAgent) -> None:
    settings = _settings(tmp_path, _input(tmp_path, [{}]))
    settings.output.parent.mkdir(parents=True)
    stale_failures = settings.output.with_name("rollouts_failures.jsonl")
    stale_failures.write_text('{"_ng_task_index": 9, "_ng_rollout_index": 9}\n')
    out = io.StringIO()
    summary = await run_collection(settings, {"agent": agent.url}, out=out)
    assert "Warning: removing" in out.getvalue()
    assert _lines(summary.outputs.failures) == []


async def test_refused_fresh_run_leaves_earlier_outputs_untouched(tmp_path: Path, agent: StubAgent) -> None:
    settings = _settings(tmp_path, _input(tmp_path, [{}]))
    await run_collection(settings, {"agent": agent.url}, out=io.StringIO())
    before = {p.name: p.read_bytes() for p in settings.output.parent.iterdir() if p.is_file()}
    refused = _settings(tmp_path, settings.input or Path(), materialize=MaterializeOptions(agent_name="nope"))
    with pytest.raises(UsageError, match="no such agent is running"):
        await run_collection(refused, {"agent": agent.url}, out=io.StringIO())
    after = {p.name: p.read_bytes() for p in settings.output.parent.iterdir() if p.is_file()}
    assert after == before
