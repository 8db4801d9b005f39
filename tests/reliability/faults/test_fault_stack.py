"""Upstream faults through the real stack: fault upstream → vllm_model → simple_agent + mcqa → `gym eval run`.

One ``gym env start`` (real processes) serves the module; each test drives the fault upstream and runs
``gym eval run --no-serve``. The oracle is :func:`tests.stubs.reliability_stack.check_partition`: every
materialized key is either in the rollouts file with the verifier's reward or in the failures file with a
class (never both, never a reward on a failure). To keep the suite fast, backoffs are shortened (0.01 s
base) and the model server makes 2 attempts (default 4); ``Retry-After`` is still honoured as sent. The
full-size run (1,000 rollouts, fault-free comparison) is ``benchmarks/reliability/run_all.py``.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from tests.stubs.fault_upstream import FaultUpstream, start_fault_upstream
from tests.stubs.processes import (
    GymProcess,
    jsonl_rows,
    kill_marked,
    new_marker,
    no_marked_processes,
    start_env,
)
from tests.stubs.reliability_stack import (
    AGENT,
    API_KEY,
    PERMANENT,
    RECOVERING,
    check_partition,
    env_args,
    failed_kinds,
    gym,
    model_log_size,
    retry_levels,
    run_args,
    write_directed_rows,
    write_mcqa_rows,
)

FAST_BACKOFF = (
    "++policy_model.responses_api_models.vllm_model.http.backoff_base_s=0.01",
    "++policy_model.responses_api_models.vllm_model.http.max_attempts=2",
    f"++{AGENT}.responses_api_agents.simple_agent.http.backoff_base_s=0.01",
)


@dataclass
class Stack:
    upstream: FaultUpstream
    env: GymProcess
    head: str
    logs: Path
    root: Path


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("fault-stack")
    marker = new_marker()
    upstream = start_fault_upstream("--retry-after", "0.5")
    try:
        env, head = start_env(
            env_args(upstream.url, root / "logs", read_timeout_s=1.0, extra=FAST_BACKOFF),
            cwd=root,
            marker=marker,
        )
        try:
            yield Stack(upstream, env, head, root / "logs", root)
        finally:
            env.signal(signal.SIGTERM)
            env.finish(30)
            assert not no_marked_processes(marker)
    finally:
        upstream.stop()
        kill_marked(marker)


def test_every_fault_kind_is_retried_or_recorded_with_its_class(stack: Stack, tmp_path: Path) -> None:
    assert stack.upstream.wait_idle()  # calls an earlier collection abandoned (timeouts) have ended
    stack.upstream.control(rates={}, retry_after_s=0.5, reset_stats=True)
    rows = write_directed_rows(tmp_path / "in.jsonl")

    out = tmp_path / "out" / "rollouts.jsonl"
    since = model_log_size(stack.logs)
    extra = ("++rollout_timeout_s=3", "++max_attempts=2")
    run = gym(
        run_args(out, input_path=tmp_path / "in.jsonl", head_url=stack.head, extra=extra), cwd=stack.root
    )
    assert run.code == 0, run.output[-3000:]
    assert "Traceback" not in run.output and API_KEY not in run.output

    found = check_partition(out.parent)
    assert found.materialized == len(rows)
    assert found.succeeded == len(rows) - len(PERMANENT)
    failed = failed_kinds(out.parent)
    assert {kind: f["_ng_failure_class"] for kind, f in failed.items()} == PERMANENT
    assert all(f["attempts"] == 2 and not f["permanent"] for f in failed.values())

    stats = stack.upstream.stats()
    # Recovering kinds hit exactly the two calls that asked for them, once each.
    for kind in set(RECOVERING) - set(PERMANENT):
        assert stats["faults"][kind] == 2, (kind, stats["faults"])
    # A 500 on every attempt: model server 2 attempts x agent 4 attempts x collector 2 attempts (+2 once).
    assert stats["faults"]["500"] == 2 * 4 * 2 + 2
    # A malformed body is not retried by the model server (a 200 it cannot use): agent 4 x collector 2.
    assert stats["faults"]["malformed"] == 4 * 2 + 2
    assert stats["retry_after"]["checked"] == 2 and stats["retry_after"]["violations"] == 0
    # The stub stamps "sent" after writing the 429, so on a loaded machine the retry can be seen a fraction
    # of a millisecond "early": the stub's own tolerance (5 ms) is what a violation is.
    assert stats["retry_after"]["min_margin_s"] >= -0.005

    assert run.summary == (found.succeeded, len(PERMANENT), len(PERMANENT))  # one collector retry each
    levels = retry_levels(stats, stack.logs, run, since)
    assert levels.model_server_retries > 0 and levels.agent_retries > 0


def test_mixed_fault_rates_run_completes_with_real_rewards(stack: Stack, tmp_path: Path) -> None:
    """The faults scenario's mix (20 % 500, 5 % 429, 5 % hangs, 5 % resets) on 200 rollouts."""
    rates = {"500": 0.2, "429": 0.05, "hang": 0.05, "reset": 0.05}
    assert stack.upstream.wait_idle()  # calls an earlier collection abandoned (timeouts) have ended
    stack.upstream.control(rates=rates, seed=3, retry_after_s=0.5, reset_stats=True)
    write_mcqa_rows(tmp_path / "in.jsonl", 50)
    out = tmp_path / "out" / "rollouts.jsonl"
    since = model_log_size(stack.logs)
    args = run_args(
        out,
        input_path=tmp_path / "in.jsonl",
        head_url=stack.head,
        repeats=4,
        extra=("++rollout_timeout_s=60",),
    )
    run = gym(args, cwd=stack.root)
    assert run.code == 0, run.output[-3000:]
    found = check_partition(out.parent)
    assert found.materialized == 200 and found.succeeded + found.failed == 200
    assert found.reward_ones == 40  # 1 of the 5 example questions expects B: a real verifier result

    stats = stack.upstream.stats()
    assert stats["calls"] == 200  # repeats carry their seed, so every rollout is its own call
    injected = sum(stats["faults"].values())
    assert stats["requests"] == stats["ok"] + injected
    assert 0.25 < injected / stats["requests"] < 0.45
    levels = retry_levels(stats, stack.logs, run, since)
    retry_after = stats["retry_after"]
    assert retry_after["checked"] == stats["faults"]["429"]
    # Every hop honours Retry-After: the model server when it retries, and when its last attempt still got
    # a 429 it answers 429 with the upstream's Retry-After, which the agent (and the collector) honour.
    assert retry_after["violations"] == 0
    # Most faults are retried by the model server itself (2 attempts here). Each call it gives up on (a
    # logged upstream failure) is retried by the agent, or fails that agent attempt (a collector retry or
    # failure). Each good upstream answer became exactly one stored rollout.
    given_up = levels.model_calls - stats["ok"]
    assert levels.model_server_retries > 0.5 * injected
    assert given_up == levels.agent_retries + levels.collector_retries + found.failed
    assert stats["ok"] == found.succeeded


def test_refused_api_key_stops_the_run_and_resume_finishes_it(stack: Stack, tmp_path: Path) -> None:
    """An upstream 401 is nobody's row's fault: the run stops at once (no retry storm, no failure rows for
    the rest of the file), says what to fix, and ``--resume`` completes every rollout once it is fixed."""
    assert stack.upstream.wait_idle()
    stack.upstream.control(rates={"401": 1.0}, reset_stats=True)
    write_mcqa_rows(tmp_path / "in.jsonl", 40)
    out = tmp_path / "out" / "rollouts.jsonl"
    first = gym(
        run_args(out, input_path=tmp_path / "in.jsonl", head_url=stack.head, concurrency=4), cwd=stack.root
    )
    assert first.code != 0
    assert "refused its credentials" in first.output and "--resume" in first.output, first.output[-2000:]
    assert "Traceback" not in first.output and API_KEY not in first.output
    found = check_partition(out.parent, complete=False)
    assert found.failed == 0  # left for --resume, not recorded: the rows did nothing wrong
    assert found.succeeded == 0
    # At most the rollouts already in flight reached the upstream, once each: nothing was retried.
    assert stack.upstream.stats()["faults"]["401"] <= 4

    stack.upstream.control(rates={}, reset_stats=True)  # the key is fixed
    resumed = gym(run_args(out, head_url=stack.head, resume=True), cwd=stack.root)
    assert resumed.code == 0, resumed.output[-3000:]
    found = check_partition(out.parent)
    assert (found.materialized, found.succeeded, found.failed) == (40, 40, 0)


def test_upstream_400_is_not_retried_and_its_reason_is_plain_text(stack: Stack, tmp_path: Path) -> None:
    """An upstream 400 rejects the request itself: no hop retries it (one upstream call), the collector
    records ``http_4xx``, and the reason is the upstream's words once — not JSON escaped in JSON."""
    assert stack.upstream.wait_idle()
    stack.upstream.control(rates={}, reset_stats=True)
    rows = write_mcqa_rows(tmp_path / "in.jsonl", 3)
    rows[0]["responses_create_params"]["input"][0]["content"] += " [[fault:400:0]]"
    (tmp_path / "in.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    out = tmp_path / "out" / "rollouts.jsonl"
    run = gym(
        run_args(out, input_path=tmp_path / "in.jsonl", head_url=stack.head, extra=("++max_attempts=3",)),
        cwd=stack.root,
    )
    assert run.code == 0, run.output[-3000:]
    found = check_partition(out.parent)
    assert (found.succeeded, found.failed) == (2, 1)
    [failure] = jsonl_rows(out.parent / "rollouts_failures.jsonl")
    assert failure["_ng_failure_class"] == "http_4xx"
    assert failure["attempts"] == 1 and failure["permanent"] is True
    reason = failure["_ng_failure_reason"]
    assert "injected fault 400" in reason
    assert "\\" not in reason and "{" not in reason, reason  # no escaped JSON at any level
    assert stack.upstream.stats()["faults"]["400"] == 1  # model server, agent and collector: no retry
