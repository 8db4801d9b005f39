"""The report's health section: the verdict, the rollout- and task-level counts and the dataset findings
with example rollouts (pure string building).

Its numbers are :func:`rewardgym.analysis.health_view.health_view`'s, the ones ``gym eval analyze`` /
``health-check`` print, so the page and the CLI cannot disagree: "No check fired." is shown only when no
check flagged a single rollout or task.
"""

from __future__ import annotations

from html import escape

import numpy as np

from rewardgym.analysis.columns import RolloutColumns
from rewardgym.analysis.document import Analysis
from rewardgym.analysis.health_view import HealthView, health_view

EXAMPLES_SHOWN = 8


def _fmt(value: float) -> str:
    return "–" if not np.isfinite(value) else f"{value:,.3f}"


def _levels(view: HealthView) -> str:
    """Rollout- and task-level counts, a row per check that flagged something."""
    rows = [
        f"<tr><td>rollouts</td><td>{escape(check)}</td><td class=num>{count:,}</td></tr>"
        for check, count in view.rollout_issues
    ] + [
        f"<tr><td>tasks</td><td>{escape(check)}</td><td class=num>{count:,}</td></tr>"
        for check, count in view.task_issues
    ]
    summary = (
        f'<p id="health-levels"><b>{view.unhealthy_rollouts:,}</b> of {view.records:,} rollouts unhealthy;'
        f" <b>{view.tasks_flagged:,}</b> of {view.tasks:,} tasks flagged,"
        f" {view.tasks_with_unhealthy_rollouts:,} with an unhealthy rollout"
        " (the task browser's “any rollout unhealthy” filter lists them).</p>"
    )
    if not rows:
        return summary
    return (
        summary + "<table><tr><th>level</th><th>check</th><th class=num>flagged</th></tr>"
        f"{''.join(rows)}</table>"
    )


def _examples(finding: dict[str, object], columns: RolloutColumns, texts: dict[int, str]) -> str:
    rows: list[str] = []
    examples = finding["examples"]
    assert isinstance(examples, list)
    for example in examples:
        task, rollout = example["_ng_task_index"], example["_ng_rollout_index"]
        start = int(np.searchsorted(columns.task, task))
        end = int(np.searchsorted(columns.task, task, side="right"))
        for i in range(start, end):
            if rollout not in (None, int(columns.rollout[i])):
                continue
            text = texts.get(i)
            shown = (
                "<pre>" + escape(text) + "</pre>"
                if text
                else f"<span class=muted>line {columns.line[i]}</span>"
            )
            rows.append(
                f"<tr><td>{task}</td><td>{int(columns.rollout[i])}</td><td class=num"
                f">{_fmt(float(columns.reward[i]))}</td><td class=num>"
                f"{'–' if not np.isfinite(columns.output_tokens[i]) else f'{columns.output_tokens[i]:,.0f}'}"
                f"</td><td>{shown}</td></tr>"
            )
            if rollout is not None or len(rows) >= EXAMPLES_SHOWN:
                break
    if not rows:
        return ""
    return (
        "<table><tr><th>task</th><th>rollout</th><th class=num>reward</th>"
        "<th class=num>output tokens</th><th>response</th></tr>" + "".join(rows[:EXAMPLES_SHOWN]) + "</table>"
    )


def health_section(
    analysis: Analysis, columns: RolloutColumns, texts: dict[int, str], unreadable: int
) -> str:
    """The section's inner HTML (see module doc)."""
    view = health_view(columns, analysis.health, unreadable)
    out = [
        "<h2>Health</h2>",
        f'<p>Verdict: <span class="verdict v-{view.verdict}">{view.verdict}</span>'
        " <span class=muted>(decided by the dataset findings below: a check over its threshold"
        " share)</span></p>",
        _levels(view),
    ]
    if not view.findings:
        nothing = not view.rollout_issues and not view.task_issues
        out.append(
            "<p class=muted>No check fired.</p>"
            if nothing
            else "<p class=muted>No check reached its dataset threshold; the rollouts and tasks above are"
            " flagged one by one.</p>"
        )
    for finding in view.findings:
        severity, check = str(finding["severity"]), str(finding["check"])
        out.append(
            f'<div class="finding {severity}" data-check="{escape(check)}">'
            f"<b>[{severity}] {escape(check)}</b>"
            f' — {escape(str(finding["evidence"]))}<div class="fix">Likely fix: {escape(str(finding["fix"]))}'
            f"</div>{_examples(finding, columns, texts)}</div>"
        )
    return "".join(out)
