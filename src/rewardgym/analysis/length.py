"""Section 3: reward versus output length, keyed by (task, rollout). Pure: numpy in, plain values out.

Contract of :func:`length_analysis` (over *counted* rollouts — numeric reward, not masked — that have an
output-token count; arrays sorted by task, ``task_pos`` the task's position per rollout):

- ``truncation``: cut-off rollouts (incomplete response or output tokens at the request's cap), their
  share, the pass rate of cut-off and of complete rollouts;
- ``within_task``: over tasks with both passing and failing rollouts, per task the median output tokens of
  the passing minus that of the failing; the median of those differences, how many tasks are longer when
  passing, and the Wilcoxon signed-rank p-value (two-sided, zero differences dropped) — a negative
  difference with a small p says failures run longer inside the same task;
- ``spearman``: the pooled rank correlation of output tokens with reward (a description only: rollouts
  of one task are not independent, so no pooled p-value is given — the one given before was below 0.05
  in 25 % of runs without any length effect), and the within-task one: the Pearson correlation of
  within-task-centred ranks (average ranks, ties averaged) over tasks where both vary — task difficulty
  cannot create it — with ``within_task_p``, the within-task permutation test of it
  (:mod:`rewardgym.stats.clustered`: 5 % false positives at the 5 % level in the calibration suite);
- ``tokens_per_solve``: output tokens summed over all rollouts / passes (None without a pass); per task in
  :func:`task_tokens_per_solve`;
- ``deciles``: rollouts split at the 10 %, …, 90 % quantiles of output tokens (ties stay in one bin, so a
  bin may be empty); per bin: token range, rollouts, pass rate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rewardgym.analysis.columns import group_value_order
from rewardgym.stats.arrays import BoolArray, FloatArray, IntArray
from rewardgym.stats.clustered import within_group_test
from rewardgym.stats.signed_rank import wilcoxon_p
from rewardgym.stats.special import ufuncs


def _ratio(top: float, bottom: float) -> float | None:
    return None if bottom == 0 else float(top) / float(bottom)


def segment_medians(values: FloatArray, keys: IntArray) -> tuple[IntArray, FloatArray]:
    """Median of ``values`` per distinct key: ``(keys, medians)``, keys ascending."""
    if values.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    order = group_value_order(keys, values)
    k, v = keys[order], values[order]
    starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
    lengths = np.diff(np.append(starts, k.shape[0]))
    medians = (v[starts + (lengths - 1) // 2] + v[starts + lengths // 2]) / 2
    return k[starts], medians.astype(np.float64)


def _tie_ranks(order: IntArray, same: BoolArray) -> FloatArray:
    """Average ranks (1-based, ties averaged) from a sorting ``order`` and, along it, whether each entry
    equals the one before. Computed as scipy's ``rankdata(method="average")`` computes them (start + 1
    plus half the tie count less one: exact half-integers), without its hash-based ``unique`` pass."""
    n = order.shape[0]
    starts = np.flatnonzero(~same)
    counts = np.diff(np.append(starts, n))
    middle = (starts + 1).astype(np.float64) + (counts - 1).astype(np.float64) / 2
    ranks = np.empty(n, np.float64)
    ranks[order] = np.repeat(middle, counts)
    return ranks


def average_ranks(values: FloatArray) -> FloatArray:
    """``scipy.stats.rankdata(values, method="average")`` of finite values."""
    if values.shape[0] == 0:
        return np.zeros(0, np.float64)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    return _tie_ranks(order, np.concatenate(([False], ordered[1:] == ordered[:-1])))


def within_task_ranks(values: FloatArray, task_pos: IntArray) -> FloatArray:
    """Average ranks of ``values`` inside each task, centred on the task's mean rank."""
    if values.shape[0] == 0:
        return np.zeros(0, np.float64)
    # Ranked by (task, value): a task's ranks are consecutive, so centring on the task's mean rank leaves
    # the within-task ranks (ties averaged, within the task only: equal values of two tasks differ in task).
    order = group_value_order(task_pos, values)
    ordered, tasks_in_order = values[order], task_pos[order]
    same = np.concatenate(
        ([False], (ordered[1:] == ordered[:-1]) & (tasks_in_order[1:] == tasks_in_order[:-1]))
    )
    ranks = _tie_ranks(order, same)
    tasks = int(task_pos.max()) + 1
    sums = np.bincount(task_pos, weights=ranks, minlength=tasks)
    counts = np.bincount(task_pos, minlength=tasks)
    return np.asarray(ranks - (sums / np.maximum(counts, 1))[task_pos], dtype=np.float64)


def pooled_spearman(x: FloatArray, y: FloatArray) -> tuple[float, float]:
    """``scipy.stats.spearmanr(x, y)`` (statistic, two-sided p) of finite, non-constant ``x`` and ``y`` with
    at least 3 entries, computed as scipy computes it — the Pearson correlation of the average ranks
    (``np.corrcoef`` on the same (n, 2) array), the p-value from Student's t with n − 2 degrees of
    freedom — with :func:`average_ranks` for the ranking."""
    ranked = np.column_stack((average_ranks(x), average_ranks(y)))
    rs = np.asarray(np.corrcoef(ranked, rowvar=False), dtype=np.float64)
    dof = x.shape[0] - 2
    with np.errstate(divide="ignore"):
        t = rs * np.sqrt((dof / ((rs + 1.0) * (1.0 - rs))).clip(0))
    prob = 2 * ufuncs().stdtr(dof, -np.abs(t))
    return float(rs[1, 0]), float(prob[1, 0])


def _varies(values: FloatArray, task_pos: IntArray) -> BoolArray:
    """Per rollout: its task has more than one distinct value."""
    tasks = int(task_pos.max()) + 1
    low = np.full(tasks, np.inf)
    high = np.full(tasks, -np.inf)
    np.minimum.at(low, task_pos, values)
    np.maximum.at(high, task_pos, values)
    return np.asarray((high > low)[task_pos], dtype=np.bool_)


def _within(tokens: FloatArray, passed: BoolArray, task_pos: IntArray) -> dict[str, Any]:
    key = task_pos * 2 + passed.astype(np.int64)
    keys, medians = segment_medians(tokens, key)
    task_of = keys // 2
    # keys are sorted: a task's failing entry (even key) comes right before its passing one (odd key)
    both = np.flatnonzero((task_of[1:] == task_of[:-1]) & (keys[:-1] % 2 == 0))
    if both.shape[0] == 0:
        return {"tasks": 0, "median_difference": None, "longer_when_passing": 0, "shorter_when_passing": 0,
                "wilcoxon_p": None}  # fmt: skip
    diffs = medians[both + 1] - medians[both]
    nonzero = diffs[diffs != 0]
    p_value = wilcoxon_p(nonzero) if nonzero.shape[0] > 0 else None
    return {
        "tasks": int(diffs.shape[0]),
        "median_difference": float(np.median(diffs)),
        "longer_when_passing": int(np.count_nonzero(diffs > 0)),
        "shorter_when_passing": int(np.count_nonzero(diffs < 0)),
        "wilcoxon_p": p_value,
    }


def _spearman(tokens: FloatArray, reward: FloatArray, task_pos: IntArray) -> dict[str, Any]:
    out: dict[str, Any] = {"pooled": None, "within_task": None, "within_task_p": None, "within_task_tasks": 0}
    if tokens.shape[0] >= 3 and np.ptp(tokens) > 0 and np.ptp(reward) > 0:
        out["pooled"], _ = pooled_spearman(tokens, reward)
    if tokens.shape[0] == 0:
        return out
    both = _varies(tokens, task_pos) & _varies(reward, task_pos)
    if int(np.count_nonzero(both)) >= 3:
        x = within_task_ranks(tokens[both], task_pos[both])
        y = within_task_ranks(reward[both], task_pos[both])
        denominator = float(np.sqrt((x * x).sum() * (y * y).sum()))
        if denominator > 0:
            out["within_task"] = float((x * y).sum() / denominator)
            kept, group = np.unique(task_pos[both], return_inverse=True)
            out["within_task_tasks"] = int(kept.shape[0])
            out["within_task_p"] = within_group_test(x, y, group.reshape(-1).astype(np.int64))
    return out


def _deciles(tokens: FloatArray, passed: BoolArray) -> list[dict[str, Any]]:
    if tokens.shape[0] == 0:
        return []
    edges = np.quantile(tokens, np.linspace(0.1, 0.9, 9))
    which = np.searchsorted(edges, tokens, side="left")
    # One pass per statistic over all rollouts (not ten boolean masks of every rollout).
    counts = np.bincount(which, minlength=10).tolist()
    passes = np.bincount(which[passed], minlength=10).tolist()
    low = np.full(10, np.inf)
    high = np.full(10, -np.inf)
    np.minimum.at(low, which, tokens)
    np.maximum.at(high, which, tokens)
    return [
        {
            "decile": decile + 1,
            "min_tokens": float(low[decile]) if counts[decile] else None,
            "max_tokens": float(high[decile]) if counts[decile] else None,
            "rollouts": counts[decile],
            "pass_rate": _ratio(passes[decile], counts[decile]),
        }
        for decile in range(10)
    ]


def length_analysis(
    task_pos: IntArray,
    counted: BoolArray,
    reward: FloatArray,
    passed: BoolArray,
    output_tokens: FloatArray,
    cut_off: BoolArray,
) -> dict[str, Any]:
    """Section 3 over the given rollouts (see module doc)."""
    use = counted & np.isfinite(output_tokens)
    tokens, rew, ok = output_tokens[use], reward[use], passed[use]
    positions, cut = task_pos[use], cut_off[use]
    cut_count = int(np.count_nonzero(cut))
    complete = ~cut
    passes = int(np.count_nonzero(ok))
    return {
        "rollouts": int(tokens.shape[0]),
        "truncation": {
            "cut_off": cut_count,
            "share": _ratio(cut_count, tokens.shape[0]),
            "pass_rate_cut_off": _ratio(int(np.count_nonzero(ok & cut)), cut_count),
            "pass_rate_complete": _ratio(
                int(np.count_nonzero(ok & complete)), int(np.count_nonzero(complete))
            ),
        },
        "within_task": _within(tokens, ok, positions),
        "spearman": _spearman(tokens, rew, positions),
        "tokens_per_solve": _ratio(float(tokens.sum()), passes),
        "output_tokens": {
            "mean": float(tokens.mean()) if tokens.shape[0] else None,
            "median": float(np.median(tokens)) if tokens.shape[0] else None,
            "max": float(tokens.max()) if tokens.shape[0] else None,
        },
        "deciles": _deciles(tokens, ok),
    }


def task_tokens_per_solve(
    task_pos: IntArray, tasks: int, counted: BoolArray, passed: BoolArray, output_tokens: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Per task: mean output tokens and output tokens per pass (NaN without tokens / passes)."""
    use = counted & np.isfinite(output_tokens)
    spent = np.bincount(task_pos[use], weights=output_tokens[use], minlength=tasks)
    counts = np.bincount(task_pos[use], minlength=tasks)
    wins = np.bincount(task_pos[use & passed], minlength=tasks)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(counts > 0, spent / np.maximum(counts, 1), np.nan)
        per_solve = np.where(wins > 0, spent / np.maximum(wins, 1), np.nan)
    return mean.astype(np.float64), per_solve.astype(np.float64)
