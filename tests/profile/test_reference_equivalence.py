"""Property test: the vectorised profiler equals a plain re-statement of the rules, byte for byte.

Random collections exercise what the golden files do not: fields present in only some rollouts,
booleans, ``_``-prefixed fields, missing/null/empty usage, masking with every truthy/falsy kind of
``mask_sample``, several agents, environment servers (labels and fan-out), partial collections,
non-contiguous and negative task indices, and shuffled rollouts.
"""

from __future__ import annotations

import random
import warnings
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewardgym.profile import profile_rows
from tests.profile.reference import ReferenceError, reference_profile

MASKS = [True, False, 1, 0, "yes", "", None]
REWARDS = [0.0, 1.0, 0.5, 0.25, 1, 0, True, False, None, "n/a", 0.1, 2.75, -1.5]


@st.composite
def collections(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], bool]:
    seed = draw(st.integers(0, 2**32 - 1))
    rng = random.Random(seed)
    task_pool = draw(st.sampled_from([list(range(8)), [-3, 0, 7, 10**12, 42], [5, 9, 2, 1000]]))
    tasks = rng.sample(task_pool, rng.randint(0, len(task_pool)))
    agents = ["alpha", "beta", "zeta"][: rng.randint(1, 3)]
    servers = draw(st.booleans())
    fan_out = draw(st.booleans())
    rows: list[dict[str, Any]] = []
    for task in tasks:
        repeats = rng.randint(1, 4)
        task_agent = rng.choice(agents)
        for rollout in range(repeats):
            agent = rng.choice(agents) if fan_out else task_agent
            row: dict[str, Any] = {"prompt": f"p{task}", "n": task % 3}
            if rng.random() > 0.05:
                row["agent_ref"] = {"name": agent}
            if servers:
                row["_ng_environment_server"] = f"srv_{agent}" if rng.random() > 0.3 else "srv_shared"
            row["_ng_task_index"] = task
            row["_ng_rollout_index"] = rollout
            rows.append(row)
    partial = draw(st.booleans())
    results = []
    for row in rows:
        if partial and rng.random() < 0.25:
            continue
        result: dict[str, Any] = {"responses_create_params": {"input": []}}
        usage_kind = rng.random()
        if usage_kind < 0.1:
            pass  # no response at all
        elif usage_kind < 0.2:
            result["response"] = None
        elif usage_kind < 0.3:
            result["response"] = {"usage": None}
        else:
            usage: dict[str, Any] = {"input_tokens": rng.randint(0, 500), "output_tokens": rng.randint(0, 50)}
            if rng.random() < 0.5:
                usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
            if rng.random() < 0.2:
                usage["_ng_cost"] = rng.random()
            usage["input_tokens_details"] = {"cached_tokens": 0}
            result["response"] = {"id": "r", "usage": usage}
        if rng.random() < 0.9:
            result["reward"] = rng.choice(REWARDS)
        if rng.random() < 0.5:
            result["score"] = rng.uniform(-3, 3)
        if rng.random() < 0.3:
            result["passed"] = rng.random() < 0.5
        if rng.random() < 0.2:
            result["_private"] = 7
        result["mask_sample"] = rng.choice(MASKS) if rng.random() < 0.3 else False
        result["failure_kind"] = None
        result["_ng_task_index"] = row["_ng_task_index"]
        result["_ng_rollout_index"] = row["_ng_rollout_index"]
        result["agent_ref"] = row.get("agent_ref")
        results.append(result)
    rng.shuffle(results)
    return rows, results, partial


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collections())
def test_matches_reference(case: tuple[list[dict[str, Any]], list[dict[str, Any]], bool]) -> None:
    rows, results, partial = case
    try:
        expected = reference_profile(rows, results, allow_partial=partial)
    except ReferenceError:
        with pytest.raises(Exception, match="Missing rollout results"):
            profile_rows(rows, results, allow_partial=partial, allow_non_numeric_rewards=True)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # NeMo Gym's behaviour for a reward that is not a number (left out) is the opt-in one.
        got = profile_rows(rows, results, allow_partial=partial, allow_non_numeric_rewards=True)
    assert orjson.dumps(got.task_rows) == orjson.dumps(expected["task_rows"])
    assert orjson.dumps(got.agent_metrics) == orjson.dumps(expected["agent_metrics"])
    assert orjson.dumps(got.repeat_level_metrics) == orjson.dumps(expected["repeat_level_metrics"])
    completion = expected["completion"]
    assert got.completion.expected_rollout_rows == completion["expected"]
    assert got.completion.completed_rollout_rows == completion["completed"]
    assert got.completion.total_input_rows == completion["total"]
    assert got.completion.complete_input_rows == completion["complete"]
    assert got.completion.missing_input_rows == completion["missing"]
    assert got.masked_rollouts == expected["masked"]
