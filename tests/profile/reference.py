"""A deliberately plain re-statement of the profile rules (docs/reference/profile.md), used as a test oracle.

It shares no code with ``rewardgym.profile``: dict loops, one group at a time, and numpy only for the
reductions pandas performs (pairwise ``np.sum`` over a group with absent values as 0 in place, the
two-pass variance, ``np.percentile``), so the vectorised implementation can be compared with it on
random data, output for output and key order for key order.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

TASK = "_ng_task_index"
ROLLOUT = "_ng_rollout_index"
STATS = ("mean", "max", "min", "median", "std")


class ReferenceError(Exception):
    pass


def _key(row: dict[str, Any]) -> tuple[int, int]:
    return row[TASK], row[ROLLOUT]


def _agent(row: dict[str, Any]) -> str | None:
    ref = row.get("agent_ref")
    return ref.get("name") if isinstance(ref, dict) else None


def _run_key(row: dict[str, Any]) -> str | None:
    server = row.get("_ng_environment_server")
    return server if server is not None else _agent(row)


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float)


def _record(result: dict[str, Any]) -> dict[str, float]:
    result = {k: v for k, v in result.items() if k != "mask_sample"}
    response = result.get("response")
    usage = response.get("usage") if isinstance(response, dict) else None
    merged = result | (usage if isinstance(usage, dict) else {})
    return {
        k: float(int(v) if isinstance(v, bool) else v)
        for k, v in merged.items()
        if _numeric(v) and not k.startswith("_")
    }


def _info(result: dict[str, Any]) -> dict[str, Any]:
    t, r = _key(result)
    info: dict[str, Any] = {"rollout_id": f"{t}:{r}", TASK: t, ROLLOUT: r}
    if "reward" in result:
        info["reward"] = result["reward"]
    response = result.get("response")
    usage = response.get("usage") if isinstance(response, dict) else None
    for k, v in (usage if isinstance(usage, dict) else {}).items():
        if _numeric(v):
            info[k] = int(v) if isinstance(v, bool) else v
    for k, v in result.items():
        if k in (TASK, ROLLOUT, "reward", "response", "mask_sample") or k.startswith("_"):
            continue
        if _numeric(v):
            info[k] = int(v) if isinstance(v, bool) else v
    return info


def _describe(records: list[dict[str, float]], columns: list[str]) -> dict[str, float]:
    out: dict[str, dict[str, float]] = {s: {} for s in STATS}
    stds: dict[str, float] = {}
    for c in columns:
        present = [c in r for r in records]
        filled = np.array([r.get(c, 0.0) for r in records], dtype=np.float64)
        n = sum(present)
        if n == 0:
            stds[c] = math.nan
            continue
        mean = np.sum(filled) / n
        squares = (mean - filled) ** 2
        squares[[not p for p in present]] = 0.0
        std = math.sqrt(np.sum(squares) / (n - 1)) if n > 1 else math.nan
        values = sorted(r[c] for r in records if c in r)
        middle = len(values) // 2
        median = values[middle] if len(values) % 2 else (0.0 + values[middle - 1] + values[middle]) / 2
        out["mean"][c] = float(mean)
        out["max"][c] = max(values)
        out["min"][c] = min(values)
        out["median"][c] = median
        stds[c] = std
    if all(math.isnan(v) for v in stds.values()):
        for c in columns:
            if all(c in r for r in records):
                stds[c] = 0.0
    out["std"] = {c: v for c, v in stds.items() if not math.isnan(v)}
    return {f"{s}/{c}": float(out[s][c]) for s in STATS for c in columns if c in out[s]}


def _interval(mean: float, sem: float, n: int) -> tuple[float, float] | None:
    if n <= 1:
        return None
    if sem == 0:
        return mean, mean
    low, high = scipy_stats.t.interval(0.95, df=n - 1, loc=mean, scale=sem)
    return float(low), float(high)


def _series(values: list[float]) -> dict[str, float]:
    x = np.array(values, dtype=np.float64)
    n = len(x)
    mean = float(np.sum(x)) / n
    std = math.sqrt(float(np.sum((mean - x) ** 2)) / (n - 1)) if n > 1 else 0.0
    return {
        "n": n,
        "mean": mean,
        "median": float(np.median(x)),
        "std": std,
        "sem": std / n**0.5,
        "min": float(x.min()),
        "max": float(x.max()),
        "p25": float(np.percentile(x, 25.0)),
        "p75": float(np.percentile(x, 75.0)),
    }


def _labels(rows: list[dict[str, Any]]) -> dict[str | None, str | None]:
    agents_of: dict[str, set[str]] = defaultdict(set)
    keys_of: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        key, agent = _run_key(row), _agent(row)
        if key is None:
            continue
        agents_of.setdefault(key, set())
        if agent is not None:
            agents_of[key].add(agent)
            keys_of[agent].add(key)
    labels: dict[str | None, str | None] = {None: None}
    for key, agents in agents_of.items():
        labels[key] = key
        if len(agents) == 1:
            (agent,) = agents
            if keys_of[agent] == {key}:
                labels[key] = agent
    counts = Counter(v for k, v in labels.items() if k is not None)
    for key in list(labels):
        if key is not None and counts[labels[key]] > 1:
            labels[key] = key
    return labels


_PRIMARY_EXCLUDED = {
    TASK,
    ROLLOUT,
    "_ng_attempt_index",
    "sample_count",
    "missing_count",
    "num_repeats",
    "token_usage_version",
}


def _primary(name: str) -> bool:
    prefixes = (
        "max/",
        "min/",
        "median/",
        "std/",
        "sem/",
        "se/",
        "p25/",
        "p75/",
        "ci_low_95/",
        "ci_high_95/",
        "histogram/",
    )
    suffixes = (
        "/max",
        "/min",
        "/median",
        "/p5",
        "/p25",
        "/p75",
        "/p95",
        "/ci_low_95",
        "/ci_high_95",
        "/ci_lower",
        "/ci_upper",
        "_ci_lower",
        "_ci_upper",
        "_ci95_lower",
        "_ci95_upper",
        "/_ng_attempt_index",
        "/std_dev_across_runs",
        "/std_err_across_runs",
        "/avg_sample_std_dev",
    )
    return (
        name not in _PRIMARY_EXCLUDED
        and not name.startswith(prefixes)
        and not name.endswith(suffixes)
        and "_across_repeats/" not in name
    )


def reference_profile(
    rows: list[dict[str, Any]], results: list[dict[str, Any]], allow_partial: bool = False
) -> dict[str, Any]:
    """Per-task rows, agent entries, repeat entries and the completion summary."""
    rows_by: dict[tuple[int, int], dict[str, Any]] = {}
    for row in rows:
        if _key(row) in rows_by:
            raise ReferenceError("duplicate row")
        rows_by[_key(row)] = row
    results_by: dict[tuple[int, int], dict[str, Any]] = {}
    for result in results:
        if _key(result) in results_by:
            raise ReferenceError("duplicate result")
        results_by[_key(result)] = result
    if set(results_by) - set(rows_by):
        raise ReferenceError("extra")
    if set(rows_by) - set(results_by) and not allow_partial:
        raise ReferenceError("missing")

    expected_groups = Counter((k[0], _run_key(r)) for k, r in rows_by.items())
    completed_groups = Counter((k[0], _run_key(rows_by[k])) for k in results_by)
    completion = {
        "expected": len(rows_by),
        "completed": len(results_by),
        "total": len(expected_groups),
        "complete": sum(1 for g, e in expected_groups.items() if completed_groups[g] == e),
        "missing": sum(1 for g in expected_groups if completed_groups[g] == 0),
    }

    masked = {k for k, r in results_by.items() if r.get("mask_sample")}
    labels = _labels(rows)
    label_of = {k: labels[_run_key(r)] for k, r in rows_by.items()}
    measured_rows = {k: r for k, r in rows_by.items() if k not in masked}
    matched = sorted(k for k in results_by if k not in masked)
    records = {k: _record(results_by[k]) for k in matched}
    columns: list[str] = []
    for k in matched:
        for c in records[k]:
            if c not in columns:
                columns.append(c)

    pairs = {(k[0], label_of[k]) for k in measured_rows}
    fan_out = len(pairs) > len({k[0] for k in measured_rows})

    task_rows = []
    group_keys: list[Any]
    member: Callable[[Any], list[tuple[int, int]]]
    expected_of: Callable[[Any], int]
    if fan_out:
        group_keys = sorted({(k[0], label_of[k]) for k in matched if label_of[k] is not None})
        member = lambda g: [k for k in matched if (k[0], label_of[k]) == g]  # noqa: E731
        expected_of = lambda g: sum(1 for k in measured_rows if (k[0], label_of[k]) == g)  # noqa: E731
    else:
        group_keys = sorted({k[0] for k in matched})
        member = lambda g: [k for k in matched if k[0] == g]  # noqa: E731
        expected_of = lambda g: sum(1 for k in measured_rows if k[0] == g)  # noqa: E731
    for g in group_keys:
        keys = member(g)
        task_row: dict[str, Any] = {TASK: keys[0][0], **_describe([records[k] for k in keys], columns)}
        if fan_out:
            task_row["agent_ref"] = {"name": g[1]}
        sample = {k: v for k, v in rows_by[keys[0]].items() if k not in (TASK, ROLLOUT)}
        n, e = len(keys), expected_of(g)
        task_row |= {
            "sample": sample,
            "num_rollouts": n,
            "expected_num_rollouts": e,
            "missing_num_rollouts": e - n,
            "reward_profile_completion_pct": 100.0 if e == 0 else 100.0 * n / e,
            "rollout_infos": [_info(results_by[k]) for k in keys],
        }
        task_rows.append(task_row)

    by_label: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for k in matched:
        label_k = label_of[k]
        if label_k is not None:
            by_label[label_k].append(k)
    repeat_entries = []
    ordered_columns = sorted(columns)
    for label in sorted(by_label):
        keys = by_label[label]
        repeats = sorted({k[1] for k in keys})
        if len(repeats) < 2:
            continue
        total = len({k[0] for k in keys})
        for r in repeats:
            in_repeat = [k for k in keys if k[1] == r]
            entry: dict[str, Any] = {
                "agent_ref": {"name": label},
                ROLLOUT: r,
                "sample_count": len(in_repeat),
                "missing_count": total - len(in_repeat),
            }
            for c in ordered_columns:
                values = [records[k][c] for k in in_repeat if c in records[k]]
                if not values:
                    continue
                s = _series(values)
                for stat in ("mean", "median", "std", "sem", "min", "max", "p25", "p75"):
                    entry[f"{stat}/{c}"] = s[stat]
                ci = _interval(s["mean"], s["sem"], int(s["n"]))
                if ci:
                    entry[f"ci_low_95/{c}"], entry[f"ci_high_95/{c}"] = ci
            repeat_entries.append(entry)

    aggregated: list[str] = []
    for entry in repeat_entries:
        for name, value in entry.items():
            if isinstance(value, float) and _primary(name) and name not in aggregated:
                aggregated.append(name)
    across: dict[str, dict[str, float]] = {}
    for entry in repeat_entries:
        across.setdefault(entry["agent_ref"]["name"], {})
    for label, aggregate in across.items():
        group = [e for e in repeat_entries if e["agent_ref"]["name"] == label]
        for m in aggregated:
            values = [e[m] for e in group if m in e]
            if not values:
                continue
            s = _series(values)
            for stat, name in (
                ("mean", "mean"),
                ("median", "median"),
                ("std", "std"),
                ("min", "min"),
                ("max", "max"),
                ("sem", "se"),
            ):
                aggregate[f"{name}_across_repeats/{m}"] = s[stat]
            ci = _interval(s["mean"], s["sem"], int(s["n"]))
            if ci:
                (
                    aggregate[f"ci_low_95_across_repeats/{m}"],
                    aggregate[f"ci_high_95_across_repeats/{m}"],
                ) = ci

    agent_entries = []
    for label in sorted(by_label):
        agent_entry: dict[str, Any] = {
            **_describe([records[k] for k in by_label[label]], columns),
            "agent_ref": {"name": label},
        }
        agent_entry |= across.get(label, {})
        agent_entries.append(agent_entry)
    cov: dict[str, dict[str, int]] = {}
    agents = {agent_name for k in results_by if (agent_name := _agent(rows_by[k])) is not None}
    for agent in sorted(agents):
        mine = [k for k in results_by if _agent(rows_by[k]) == agent]
        masked_mine = [k for k in mine if k in masked]
        if not masked_mine:
            continue
        measured_tasks = {k[0] for k in mine if k not in masked}
        cov[agent] = {
            "coverage/measured_rollouts": len(mine) - len(masked_mine),
            "coverage/masked_rollouts": len(masked_mine),
            "coverage/measured_tasks": len(measured_tasks),
            "coverage/fully_masked_tasks": len({k[0] for k in mine} - measured_tasks),
        }
    for entry in agent_entries:
        entry.update(cov.pop(entry["agent_ref"]["name"], {}))
    for agent in sorted(cov):
        agent_entries.append({"agent_ref": {"name": agent}, **cov[agent]})

    return {
        "task_rows": task_rows,
        "agent_metrics": agent_entries,
        "repeat_level_metrics": repeat_entries,
        "completion": completion,
        "masked": len(masked),
    }
