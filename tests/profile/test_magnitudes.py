"""A metric value too large to profile (1e308: NeMo Gym writes std null, CI -inf..inf) is
refused by file:line and field; up to ±1e100 every statistic is finite and computed as before."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import pytest

from rewardgym.errors import DataError
from rewardgym.profile import profile_files
from tests.profile.helpers import write_jsonl


def _files(folder: Path, results: list[dict[str, Any]]) -> tuple[Path, Path]:
    rows = [
        {"q": r["_ng_task_index"], "agent_ref": {"name": "a"}, "_ng_task_index": r["_ng_task_index"],
         "_ng_rollout_index": r["_ng_rollout_index"]}
        for r in results
    ]  # fmt: skip
    return write_jsonl(folder / "r_materialized_inputs.jsonl", rows), write_jsonl(folder / "r.jsonl", results)


def test_a_value_beyond_1e100_names_its_line_and_field(tmp_path: Path) -> None:
    results: list[dict[str, Any]] = [
        {"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1.0, "mask_sample": True},
        {"_ng_task_index": 0, "_ng_rollout_index": 1, "note": "no numbers"},
        {"_ng_task_index": 1, "_ng_rollout_index": 0, "reward": -1e100, "response": {"usage": {"t": 3}}},
        {"_ng_task_index": 1, "_ng_rollout_index": 1, "reward": 0.5, "response": {"usage": {"t": -2e150}}},
        {"_ng_task_index": 2, "_ng_rollout_index": 0, "reward": 1e308},
    ]
    inputs, rollouts = _files(tmp_path, results)
    with pytest.raises(DataError, match=rf"^{rollouts}:4: 't' is -2e\+150, beyond ±1e\+100: the statistics"):
        profile_files(inputs, rollouts)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.jsonl", "r_materialized_inputs.jsonl"]


def test_values_up_to_1e100_give_finite_statistics(tmp_path: Path) -> None:
    results = [
        {"_ng_task_index": t, "_ng_rollout_index": r, "reward": v}
        for t, pair in enumerate([(1e100, -1e100), (1e100, 1e100), (-1e100, 0.0)])
        for r, v in enumerate(pair)
    ]
    inputs, rollouts = _files(tmp_path, results)
    result = profile_files(inputs, rollouts)
    assert result.paths is not None
    numbers: list[float] = []
    for row in [orjson.loads(line) for line in result.paths.reward_profiling.read_bytes().splitlines()]:
        numbers += [v for k, v in row.items() if "/" in k]
    for entry in result.agent_metrics + result.repeat_level_metrics:
        numbers += [v for k, v in entry.items() if "/" in k]
    assert numbers and all(isinstance(v, float) and math.isfinite(v) for v in numbers)
