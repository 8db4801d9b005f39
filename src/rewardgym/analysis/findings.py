"""Dataset-level health verdicts from the per-rollout and per-task flags (pure; no I/O).

Contract of :func:`dataset_findings`: one :class:`Finding` per check that fired,
with the thresholds below, its evidence in words and a likely fix, most severe first.

| check | warning | error |
|---|---|---|
| record_unreadable, rollout_duplicate_identity, reward_out_of_range | — | any |
| no_extracted_answer | ≥ 5 % of rollouts | ≥ 50 % |
| agent_turn_hollow | any | ≥ 20 % |
| model_call_zero_completion_tokens, model_call_runaway_generation | any | ≥ 20 % |
| model_call_missing_token_counts | any | ≥ 50 % |
| rollout_cut_off | ≥ 5 % | ≥ 20 % |
| repeats_identical | ≥ 20 % of tasks with ≥ 2 repeats | ≥ 50 % |
| task_zero_all_cut_off, task_no_successful_model_calls | any task | — |
| task_not_collected | any task | ≥ 5 % of the materialized tasks |
| collection_failures | any | ≥ 5 % of materialized rollouts |
"""

from __future__ import annotations

import numpy as np

from rewardgym.analysis.columns import RolloutColumns
from rewardgym.analysis.health_types import Finding, Health

_SEVERITY_ORDER = {"error": 0, "warning": 1}


def _pct(count: int, total: int) -> str:
    return f"{100.0 * count / total:.1f} %" if total else "0 %"


def _level(share: float, warn: float, error: float) -> str | None:
    if share >= error:
        return "error"
    if share >= warn and share > 0:
        return "warning"
    return None


def dataset_findings(
    health: Health,
    columns: RolloutColumns,
    reward_range: tuple[float, float],
    failure_classes: dict[str, int],
    *,
    materialized: int | None,
) -> list[Finding]:
    total = len(columns) + health.unreadable
    rows = len(columns)
    out: list[Finding] = []

    def examples(check: str) -> list[tuple[int, int | None]]:
        where = np.flatnonzero(health.rollout_flags[check])[:5]
        return [(int(columns.task[i]), int(columns.rollout[i])) for i in where]

    def rollout_finding(check: str, warn: float, error: float, evidence: str, fix: str) -> None:
        count = int(np.count_nonzero(health.rollout_flags[check]))
        level = _level(count / rows if rows else 0.0, warn, error)
        if count and level:
            text = evidence.format(count=count, rows=rows, pct=_pct(count, rows))
            out.append(Finding(check, level, count, rows, "rollouts", text, fix, examples(check)))

    if health.unreadable:
        out.append(
            Finding(
                "record_unreadable", "error", health.unreadable, total, "lines",
                f"{health.unreadable} of {total} lines are not JSON objects with integer indices",
                "the file was damaged or is not a rollouts file; re-run or resume the collection",
            )
        )  # fmt: skip
    rollout_finding(
        "rollout_duplicate_identity", 0.0, 1e-12,
        "{count} rollout lines share their (task, rollout) key with another line",
        "merge shards with 'gym eval aggregate', or resume instead of appending a second run",
    )  # fmt: skip
    low, high = reward_range
    rollout_finding(
        "reward_out_of_range", 0.0, 1e-12,
        "{count} rewards ({pct}) lie outside the declared range " + f"[{low:g}, {high:g}] or are not numbers",
        "check the verifier's reward scale; if it is right, declare it as reward_range in the resources "
        "server's config (or pass --reward-range)",
    )  # fmt: skip
    rollout_finding(
        "no_extracted_answer", 0.05, 0.5,
        "the verifier extracted no answer from {count} of {rows} rollouts ({pct}): extracted_answer is null",
        "make the prompt ask for the exact answer format the verifier parses (e.g. \\boxed{}), use a "
        "lenient grading mode, or a model that follows the format",
    )  # fmt: skip
    rollout_finding(
        "agent_turn_hollow", 1e-12, 0.2,
        "{count} responses ({pct}) have no message text, no reasoning and no tool call",
        "check the model server's chat template / stop tokens and that the agent returns the model output",
    )  # fmt: skip
    rollout_finding(
        "model_call_zero_completion_tokens", 1e-12, 0.2,
        "{count} responses ({pct}) report 0 completion tokens",
        "the model stopped at once: check the chat template, stop strings and the context length",
    )  # fmt: skip
    rollout_finding(
        "model_call_missing_token_counts", 1e-12, 0.5,
        "{count} responses ({pct}) report no prompt or no completion token count in usage",
        "make the model server return usage (input_tokens / output_tokens) with every response: token "
        "statistics and the length analysis need it",
    )  # fmt: skip
    rollout_finding(
        "model_call_runaway_generation", 1e-12, 0.2,
        "{count} responses ({pct}) hit the output-token limit without producing any content",
        "raise max_output_tokens, or limit reasoning; check for repetition loops at this temperature",
    )  # fmt: skip
    rollout_finding(
        "rollout_cut_off", 0.05, 0.2,
        "{count} of {rows} rollouts ({pct}) were cut off at the output-token limit",
        "raise max_output_tokens (responses_create_params) or ask for shorter answers",
    )  # fmt: skip
    starts_n = health.task_ids.shape[0]
    identical = health.task_flags["repeats_identical"]
    eligible = int(np.count_nonzero(_repeat_counts(columns, starts_n) >= 2))
    count = int(np.count_nonzero(identical))
    level = _level(count / eligible if eligible else 0.0, 0.2, 0.5)
    if count and level:
        tasks = health.task_ids[identical][:5].tolist()
        out.append(
            Finding(
                "repeats_identical", level, count, eligible, "tasks",
                f"every repeat of {count} of {eligible} tasks ({_pct(count, eligible)}) "
                "returned the same text",
                # Most often the repeats share one seed (or none, with a server that seeds by default):
                # the flag that gives each its own comes first, the temperature second.
                "give every repeat its own seed (gym eval run --num-repeats-add-seed): repeats that share "
                "a seed come back identical even at temperature > 0; with seeds, check that the "
                "temperature reaches the server",
                [(int(t), None) for t in tasks],
            )
        )  # fmt: skip
    zero_cut = health.task_flags["task_zero_all_cut_off"]
    count = int(np.count_nonzero(zero_cut))
    if count:
        out.append(
            Finding(
                "task_zero_all_cut_off", "warning", count, starts_n, "tasks",
                f"{count} task(s) at 0 % had every rollout cut off: not hard, truncated",
                "raise max_output_tokens before treating these tasks as unsolvable",
                [(int(t), None) for t in health.task_ids[zero_cut][:5].tolist()],
            )
        )  # fmt: skip
    lost = int(health.failure_tasks.shape[0])
    if lost:
        out.append(
            Finding(
                "task_no_successful_model_calls", "warning", lost, starts_n + lost, "tasks",
                f"{lost} task(s) have no rollout at all: every repeat is in the failures file",
                "look at those tasks' failure reasons; they may be too long for the context or break "
                "the verifier",
                [(int(t), None) for t in health.failure_tasks[:5].tolist()],
            )
        )  # fmt: skip
    missing = int(health.uncollected_tasks.shape[0])
    if missing:
        known = starts_n + lost + missing
        out.append(
            Finding(
                "task_not_collected", "error" if missing / known >= 0.05 else "warning", missing, known,
                "tasks",
                f"{missing} task(s) of the materialized inputs have neither a rollout nor a failure record: "
                "the run was interrupted or is partial",
                "resume the run with --resume (gym eval run --resume) to collect the missing rollouts",
                [(int(t), None) for t in health.uncollected_tasks[:5].tolist()],
            )
        )  # fmt: skip
    failed = sum(failure_classes.values())
    if failed:
        base = materialized if materialized else failed + rows
        classes = ", ".join(f"{k} {v}" for k, v in sorted(failure_classes.items(), key=lambda kv: -kv[1]))
        out.append(
            Finding(
                "collection_failures", "error" if failed / base >= 0.05 else "warning", failed, base,
                "rollouts", f"{failed} rollouts failed ({classes})",
                "read <stem>_failures.jsonl; transient classes (timeout, http_5xx, rate_limited) usually "
                "finish with 'gym eval run --resume'",
            )
        )  # fmt: skip
    out.sort(key=lambda f: _SEVERITY_ORDER[f.severity])
    return out


def _repeat_counts(columns: RolloutColumns, tasks: int) -> np.ndarray:
    if len(columns) == 0:
        return np.zeros(0, np.int64)
    starts = np.flatnonzero(np.concatenate(([True], columns.task[1:] != columns.task[:-1])))
    return np.diff(np.append(starts, len(columns)))
