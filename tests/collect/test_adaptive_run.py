"""``gym eval run --adaptive`` against a real stub policy of known per-task success probability.

The agent (:mod:`tests.stubs.bernoulli_agent`, its own process on 127.0.0.1) rewards a key by a draw fixed
by the key, so every test knows each rollout's outcome in advance: rounds go only to unsettled tasks, caps
and the budget hold, the files are what a fixed-repeats run would hold for the same keys (so ``gym eval
profile`` gives the same numbers), and a run killed with SIGKILL mid-round resumes to the exact key set.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from rewardgym.collect.materialize import MaterializeOptions
from rewardgym.collect.runner import run_collection
from rewardgym.collect.settings import CollectSettings
from rewardgym.errors import UsageError
from rewardgym.profile.api import profile_files
from rewardgym.stats.adaptive import AdaptivePolicy, fit_prior, unsettled
from tests.stubs.bernoulli_agent import BernoulliAgent, reward, start_bernoulli_agent

P_SPREAD = [0.0] * 14 + [1.0] * 6 + [0.5, 0.3, 0.7, 0.15, 0.85, 0.5, 0.4, 0.6, 0.25, 0.1]


@pytest.fixture(scope="module")
def agent() -> Iterator[BernoulliAgent]:
    with start_bernoulli_agent("--delay-ms", "1") as running:
        yield running


def _input(tmp_path: Path, ps: list[float] = P_SPREAD) -> Path:
    path = tmp_path / "tasks.jsonl"
    rows = [
        {"responses_create_params": {"input": f"q{i}"}, "p": p, "agent_ref": {"name": "agent"}}
        for i, p in enumerate(ps)
    ]
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _keys(rows: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [(r["_ng_task_index"], r["_ng_rollout_index"]) for r in rows]


def _per_task(rows: list[dict[str, Any]]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for task, _ in _keys(rows):
        counts[task] = counts.get(task, 0) + 1
    return counts


async def _run(
    tmp_path: Path, agent: BernoulliAgent, policy: AdaptivePolicy | None, name: str = "out", **kwargs: Any
) -> tuple[Path, str]:
    output = tmp_path / name / "rollouts.jsonl"
    repeats = policy.initial if policy is not None else kwargs.pop("num_repeats", 1)
    settings = CollectSettings(
        output=output,
        input=_input(tmp_path),
        materialize=MaterializeOptions(num_repeats=repeats, add_seed=True),
        concurrency=8,
        adaptive=policy,
        disable_aggregation=True,
        live_progress=False,
        **kwargs,
    )
    printed = io.StringIO()
    summary = await run_collection(settings, {"agent": agent.url}, out=printed)
    assert summary.stop_reason is None
    return output, printed.getvalue()


def _check_exact(output: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Materialized keys == rollout keys, each once, indices 0..n-1 per task; returns both files' rows."""
    materialized = _lines(output.with_name("rollouts_materialized_inputs.jsonl"))
    rollouts = _lines(output)
    assert len(set(_keys(rollouts))) == len(rollouts), "a rollout recorded twice"
    assert len(set(_keys(materialized))) == len(materialized), "a key materialized twice"
    assert set(_keys(rollouts)) == set(_keys(materialized))
    for task, count in _per_task(materialized).items():
        assert {r for t, r in _keys(materialized) if t == task} == set(range(count))
    for row in rollouts:
        p = P_SPREAD[row["_ng_task_index"]]
        assert row["reward"] == reward(p, row["_ng_task_index"], row["_ng_rollout_index"])
    return materialized, rollouts


def _first_mixed(p: float, task: int, upto: int) -> int | None:
    outcomes = [reward(p, task, r) for r in range(upto)]
    for count in range(2, upto + 1):
        if len(set(outcomes[:count])) == 2:
            return count
    return None


def _settled_or_capped(materialized: list[dict[str, Any]], policy: AdaptivePolicy) -> None:
    """Every task is settled under the rule on the final counts, or at the cap."""
    counts = _per_task(materialized)
    tasks = sorted(counts)
    n = [counts[t] for t in tasks]
    s = [sum(reward(P_SPREAD[t], t, r) == 1.0 for r in range(counts[t])) for t in tasks]
    import numpy as np

    n_a, s_a = np.array(n, dtype=np.int64), np.array(s, dtype=np.int64)
    open_ = unsettled(n_a, s_a, policy, fit_prior(n_a, s_a))
    assert all(not o or c >= policy.max_per_task for o, c in zip(open_.tolist(), n, strict=True))


async def test_rounds_go_only_to_unsettled_tasks(tmp_path: Path, agent: BernoulliAgent) -> None:
    policy = AdaptivePolicy(initial=4, max_per_task=16, step=4)
    output, printed = await _run(tmp_path, agent, policy)
    materialized, _ = _check_exact(output)
    counts = _per_task(materialized)
    for task, count in counts.items():
        assert 4 <= count <= 16 and count % 4 == 0, (task, count)
        mixed = _first_mixed(P_SPREAD[task], task, count)
        if mixed is not None:
            # extended while it was all-pass or all-fail, never after its first pass-and-fail
            assert count == math.ceil(mixed / 4) * 4, (task, count, mixed)
    _settled_or_capped(materialized, policy)  # all-same tasks: extended until settled or capped
    rounds = [line for line in printed.splitlines() if line.startswith("Adaptive round")]
    added = sum(int(line.split("+")[1].split()[0]) for line in rounds)
    assert rounds and added == len(materialized) - 4 * len(P_SPREAD)
    # the tasks in between stop at their first pass-and-fail: fewer rollouts than 16 fixed repeats
    assert sum(counts.values()) < 16 * len(P_SPREAD)
    # the run says what it saved and what it costs against fixed repeats at its cap
    assert "What it costs, expected under this run's fitted prior, against 16 fixed repeats" in printed
    assert len(materialized) < 16 * len(P_SPREAD)
    assert "Adaptive repeats: 30 tasks" in printed


async def test_per_task_cap_and_budget_hold(tmp_path: Path, agent: BernoulliAgent) -> None:
    capped = AdaptivePolicy(initial=2, max_per_task=5, step=2, confidence=0.999)
    output, _ = await _run(tmp_path, agent, capped, name="capped")
    materialized, _ = _check_exact(output)
    assert max(_per_task(materialized).values()) == 5  # 2 + 2 + 1: the last round stops at the cap
    budget = AdaptivePolicy(initial=4, max_per_task=16, step=4, budget=4 * 30 + 22)
    output, printed = await _run(tmp_path, agent, budget, name="budget")
    materialized, _ = _check_exact(output)
    assert len(materialized) == 4 * 30 + 22  # spent to the last rollout, never beyond
    assert "undecided at the cap or budget" in printed


async def test_budget_below_the_first_round_is_refused_before_anything_is_written(
    tmp_path: Path, agent: BernoulliAgent
) -> None:
    with pytest.raises(UsageError, match=r"--adaptive-budget 100 is smaller than the first round: 120"):
        await _run(tmp_path, agent, AdaptivePolicy(initial=4, budget=100))
    assert not (tmp_path / "out" / "rollouts_materialized_inputs.jsonl").exists()
    assert not (tmp_path / "out" / "rollouts.jsonl").exists()


async def test_files_are_a_fixed_run_restricted_to_its_keys_and_profile_alike(
    tmp_path: Path, agent: BernoulliAgent
) -> None:
    adaptive, _ = await _run(tmp_path, agent, AdaptivePolicy(initial=4, max_per_task=16), name="adaptive")
    fixed, _ = await _run(tmp_path, agent, None, name="fixed", num_repeats=16)
    a_rows = adaptive.with_name("rollouts_materialized_inputs.jsonl").read_bytes().splitlines()
    f_rows = fixed.with_name("rollouts_materialized_inputs.jsonl").read_bytes().splitlines()
    by_key = {
        (r["_ng_task_index"], r["_ng_rollout_index"]): raw
        for raw, r in zip(f_rows, map(orjson.loads, f_rows), strict=True)
    }
    # every row an adaptive round appended is byte for byte the row a fixed materialization writes
    for raw in a_rows:
        row = orjson.loads(raw)
        assert by_key[(row["_ng_task_index"], row["_ng_rollout_index"])] == raw
    keep = {(r["_ng_task_index"], r["_ng_rollout_index"]) for r in map(orjson.loads, a_rows)}
    subset = tmp_path / "subset"
    subset.mkdir()
    for source, target in (
        (
            fixed.with_name("rollouts_materialized_inputs.jsonl"),
            subset / "rollouts_materialized_inputs.jsonl",
        ),
        (fixed, subset / "rollouts.jsonl"),
    ):
        lines = [raw for raw in source.read_bytes().splitlines() if _keys([orjson.loads(raw)])[0] in keep]
        target.write_bytes(b"".join(line + b"\n" for line in lines))
    for folder in (adaptive.parent, subset):
        # Tasks with unequal repeat counts: the profiler (like NeMo Gym's) warns, and must.
        with pytest.warns(UserWarning, match="missing rollouts"):
            profile_files(folder / "rollouts_materialized_inputs.jsonl", folder / "rollouts.jsonl")
    for name in (
        "rollouts_reward_profiling.jsonl",
        "rollouts_agent_metrics.json",
        "rollouts_repeat_level_metrics.json",
    ):
        assert (adaptive.parent / name).read_bytes() == (subset / name).read_bytes(), name
    profiled = _lines(adaptive.parent / "rollouts_reward_profiling.jsonl")
    assert all(row["reward_profile_completion_pct"] == 100.0 for row in profiled)
    counts = _per_task(_lines(adaptive.with_name("rollouts_materialized_inputs.jsonl")))
    assert {row["_ng_task_index"]: row["num_rollouts"] for row in profiled} == counts


async def test_resume_runs_appended_rows_and_cuts_a_row_torn_mid_append(
    tmp_path: Path, agent: BernoulliAgent
) -> None:
    policy = AdaptivePolicy(initial=4, max_per_task=16)
    output, _ = await _run(tmp_path, agent, policy)
    materialized = output.with_name("rollouts_materialized_inputs.jsonl")
    rows = _lines(materialized)
    counts = _per_task(rows)
    task = next(t for t, n in counts.items() if n < 16)  # room for one more
    first = next(r for r in rows if r["_ng_task_index"] == task and r["_ng_rollout_index"] == 0)
    # a round killed after appending one row (never run), then inside the next row's write
    appended = orjson.dumps({**first, "_ng_rollout_index": counts[task]}) + b"\n"
    torn = orjson.dumps({**first, "_ng_rollout_index": counts[task] + 1})[:25]
    with open(materialized, "ab") as handle:
        handle.write(appended + torn)
    settings = CollectSettings(
        output=output, resume=True, concurrency=8, disable_aggregation=True, live_progress=False
    )
    printed = io.StringIO()
    summary = await run_collection(settings, {"agent": agent.url}, out=printed)
    assert summary.stop_reason is None
    assert f"{materialized}:{len(rows) + 2} was cut short by a crash" in printed.getvalue()
    assert summary.stats.succeeded >= 1
    after, stored = _check_exact(output)
    assert (task, counts[task]) in set(_keys(stored))
    assert after[: len(rows) + 1] == [*rows, orjson.loads(appended)]


async def test_a_band_boundary_decision_runs_the_same_rounds(tmp_path: Path, agent: BernoulliAgent) -> None:
    import numpy as np

    policy = AdaptivePolicy(initial=2, max_per_task=12, step=2, boundary=0.5)
    output, printed = await _run(tmp_path, agent, policy)
    materialized, _ = _check_exact(output)
    counts = _per_task(materialized)
    tasks = sorted(counts)
    n = np.array([counts[t] for t in tasks], dtype=np.int64)
    s = np.array(
        [sum(reward(P_SPREAD[t], t, r) == 1.0 for r in range(counts[t])) for t in tasks], dtype=np.int64
    )
    open_ = unsettled(n, s, policy)
    assert all(not o or c == 12 for o, c in zip(open_.tolist(), n.tolist(), strict=True))
    # p = 0 and p = 1 tasks are far from 0.5: two rollouts do not settle them, a few rounds do
    assert max(counts[t] for t, p in enumerate(P_SPREAD) if p in (0.0, 1.0)) < 12
    assert "above" in printed and "below" in printed
