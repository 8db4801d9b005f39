"""Writing synthetic runs of known per-task pass probability for the compare tests: materialized inputs
made by the real materializer (so seeds and key order are what ``gym eval run`` writes) and rollouts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson

from rewardgym.collect.materialize import MaterializeOptions, iter_materialized


def task_rows(tasks: int, *, uuid: bool = False) -> list[dict[str, Any]]:
    rows = []
    for t in range(tasks):
        message = {"role": "user", "content": f"question {t}?"}
        row: dict[str, Any] = {"responses_create_params": {"input": [message]}, "expected": str(t)}
        if uuid:
            row["uuid"] = f"id-{t}"
        rows.append(row)
    return rows


def write_run(
    folder: Path,
    stem: str,
    rows: list[dict[str, Any]],
    passes: list[list[int]] | np.ndarray,
    *,
    seed: bool = True,
    order: list[int] | None = None,
) -> Path:
    """A run of ``rows`` (in ``order``), task i with rewards ``passes[i]`` (one per repeat)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"{stem}_data.jsonl"
    shown = order if order is not None else list(range(len(rows)))
    data.write_bytes(b"".join(orjson.dumps(rows[i]) + b"\n" for i in shown))
    repeats = len(passes[0])
    options = MaterializeOptions(num_repeats=repeats, agent_name="agent", add_seed=seed)
    materialized = list(iter_materialized(data, options))
    inputs = folder / f"{stem}_materialized_inputs.jsonl"
    inputs.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in materialized))
    out = []
    for row in materialized:
        source = shown[row["_ng_task_index"]]
        reward = float(passes[source][row["_ng_rollout_index"]])
        out.append({**row, "response": {"output": []}, "reward": reward})
    rollouts = folder / f"{stem}.jsonl"
    rollouts.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in out[::-1]))
    return rollouts


def simulate(p: np.ndarray, repeats: int, rng: np.random.Generator) -> np.ndarray:
    """0/1 outcomes, one row per task, ``repeats`` columns, success probability ``p`` per task."""
    return (rng.random((p.shape[0], repeats)) < p[:, None]).astype(np.int64)
