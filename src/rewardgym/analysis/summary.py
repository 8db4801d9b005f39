"""The printed summary of an analysis (:class:`~rewardgym.analysis.api.AnalyzeResult`), as lines of text.

Contract: :func:`summary_lines` — bands with settled counts, the adaptive-run note, the repeats to settle,
GRPO, truncation, then :func:`health_lines` (the verdict, the dataset findings, the rollout- and task-level
counts, the report's too); :func:`result_lines` — the summary then one ``Wrote <path>`` line per written
file. The library makes the lines (``gym eval profile --report``'s analysis child sends them back through
a pipe); the CLI prints them.
"""

from __future__ import annotations

from rewardgym.analysis.api import AnalyzeResult


def summary_lines(result: AnalyzeResult) -> list[str]:
    """The printed summary of an analysis: bands with settled counts, GRPO, truncation, health."""
    doc = result.analysis.document
    lines = []
    bands = doc["uncertainty"]["bands"]
    tasks = doc["uncertainty"]["tasks"]
    parts = [f"{b['band']} {b['tasks']} ({b['settled']} settled)" for b in bands if b["tasks"]]
    lines.append(
        f"Tasks by pass rate ({tasks} tasks; settled: ≥ 95 % posterior in the band): " + ", ".join(parts)
    )
    if doc["uncertainty"]["design"] == "adaptive":
        lines.append(
            "Adaptive run: per-task pass rates are estimates unbiased under its stopping rule "
            "(s / n is pulled toward 1/2 by it); they are noisier than fixed repeats' (docs/decide.md)."
        )
    more = doc["uncertainty"].get("repeats_to_settle")  # a hook: set by the statistics when they can
    if isinstance(more, (int, float)) and not isinstance(more, bool):
        beyond = doc["uncertainty"].get("unsettled_beyond_reach") or 0
        far = f"; {beyond:,} more need over 1,024 each" if beyond else ""
        lines.append(f"To settle the unsettled tasks: about {more:,.0f} more repeats{far}")
    grpo = doc["grpo"]
    share = grpo["informative_share_default"]
    shown = "n/a" if share is None else f"{100 * share:.1f} %"
    span = grpo.get("informative_share_default_range")
    if share is not None and span is not None and span[1] - span[0] >= 0.005:
        shown += f" (the data allow {100 * span[0]:.1f}–{100 * span[1]:.1f} %)"
    smallest = grpo["smallest_group_size"]["all"]
    lines.append(
        f"GRPO: informative groups at G={grpo['default_group_size']}: {shown}; "
        f"smallest G reaching {100 * grpo['target_share']:.0f} %: {smallest if smallest else 'none ≤ 4096'}"
    )
    trunc = doc["length"]["truncation"]
    cut_share = trunc["share"]
    lines.append(
        "Truncation: "
        + ("n/a (no token counts)" if cut_share is None else f"{100 * cut_share:.1f} % of rollouts cut off")
    )
    lines.extend(health_lines(result))
    return lines


def health_lines(result: AnalyzeResult) -> list[str]:
    """The verdict, the dataset findings, then the rollout- and task-level counts (the report's too)."""
    from rewardgym.analysis.health_view import health_view, view_lines

    health = result.analysis.document["health"]
    lines = [f"Health: {health['verdict']}"]
    for finding in health["findings"]:
        lines.append(f"  [{finding['severity']}] {finding['check']}: {finding['evidence']}")
        lines.append(f"      fix: {finding['fix']}")
    view = health_view(result.scan.columns, result.analysis.health, len(result.scan.unreadable))
    lines.extend(view_lines(view))
    return lines


def result_lines(result: AnalyzeResult) -> list[str]:
    """The summary, then the files written."""
    return [*summary_lines(result), *(f"Wrote {path}" for path in result.written)]
