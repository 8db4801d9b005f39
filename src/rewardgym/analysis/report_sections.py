"""Chart and metrics sections of the HTML report (pure string building from the analysis document)."""

from __future__ import annotations

from html import escape
from typing import Any

import numpy as np

from rewardgym.analysis.document import Analysis
from rewardgym.analysis.svg import bar_chart, heatmap, line_chart
from rewardgym.profile import BAND_LABELS


def _num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else escape(str(value))


def _share(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def settle_sentence(uncertainty: dict[str, Any]) -> str:
    """The overall "more repeats to settle" when the statistics provide it (a hook: see
    ``document.Analysis.repeats_to_settle``); empty otherwise."""
    more = uncertainty.get("repeats_to_settle")
    if not isinstance(more, (int, float)) or isinstance(more, bool):
        return ""
    return (
        f' <span id="repeats-to-settle">About {more:,.0f} more repeats would settle the unsettled'
        " tasks.</span>"
    )


def _design_note(uncertainty: dict[str, Any]) -> str:
    if uncertainty.get("design") != "adaptive":
        return ""
    return (
        " Adaptive run: each task's pass rate is the estimate unbiased under the run's stopping rule"
        " (its s / n is pulled toward ½); noisier than fixed repeats' — see docs/decide.md."
    )


def bands_section(doc: dict[str, Any]) -> str:
    bands = doc["uncertainty"]["bands"]
    chart = bar_chart(
        "bands", "Tasks per pass-rate band; the darker part is settled (≥ 95 % posterior in the band)",
        [b["band"] for b in bands], [b["tasks"] for b in bands], highlight=[b["settled"] for b in bands],
        y_label="tasks", x_label="pass-rate band",
    )  # fmt: skip
    rows = "".join(
        f"<tr><td>{escape(b['band'])}</td><td class=num>{b['tasks']:,}</td><td class=num"
        f">{b['settled']:,}</td></tr>"
        for b in bands
    )
    u = doc["uncertainty"]
    return (
        "<h2>Pass rates and their uncertainty</h2><p class=muted>Pass: reward ≥"
        f" {doc['settings']['pass_threshold']}."
        f" {u['settled']:,} of {u['tasks']:,} tasks settled (at least 95 % of the task's posterior, under"
        " the prior fitted to this run's tasks, inside its band; point bands"
        f" widened by {doc['settings']['settle_epsilon']}).{_design_note(u)}{settle_sentence(u)}</p>"
        f"<div class=grid2>{chart}"
        "<table><tr>"
        "<th>band</th>"
        f"<th class=num>tasks</th><th class=num>settled</th></tr>{rows}</table></div>"
    )


def grpo_section(doc: dict[str, Any]) -> str:
    g = doc["grpo"]
    sizes = [row["group_size"] for row in g["groups"]]
    names = (("all", "all tasks"), ("drop_settled_0_100", "without settled 0 / 100 %"),
             ("drop_observed_0_100", "without observed 0 / 100 %"))  # fmt: skip
    chart = line_chart(
        "grpo", "Expected share of GRPO groups with a learning signal, by group size G",
        sizes, [(label, [row[key] for row in g["groups"]]) for key, label in names],
        x_label="group size G (rollouts per task)", y_label="informative groups",
    )  # fmt: skip
    head = "".join(f"<th class=num>{label}</th>" for _, label in names)
    rows = "".join(
        f"<tr><td>{row['group_size']}</td>"
        + "".join(
            f"<td class=num>{'–' if row[k] is None else f'{100 * row[k]:.1f} %'}</td>" for k, _ in names
        )
        + "</tr>"
        for row in g["groups"]
    )
    smallest = g["smallest_group_size"]
    kept = g["tasks_kept"]
    target = "".join(
        f"<tr><td>{label}</td><td class=num>{kept[k]:,}</td><td class=num"
        f">{smallest[k] or 'none ≤ 4096'}</td></tr>"
        for k, label in names
    )
    return (
        f"<h2>GRPO zero-signal forecast</h2><p class=muted>{escape(g['method'])}."
        f" {g['binary_tasks']:,} binary"
        f" tasks, {g['plugin_tasks']:,} with other rewards (plug-in).</p><div class=grid2>{chart}<div><table>"
        f"<tr><th>G</th>{head}</tr>{rows}</table><p>Smallest G reaching {100 * g['target_share']:.0f} %"
        f" informative groups:</p><table><tr><th>tasks</th><th class=num>kept</th><th class=num>G</th></tr>"
        f"{target}</table></div></div>"
    )


def length_section(doc: dict[str, Any], analysis: Analysis) -> str:
    length = doc["length"]
    deciles = length["deciles"]
    labels = [f"≤{d['max_tokens']:,.0f}" if d["max_tokens"] is not None else "" for d in deciles]
    decile_chart = bar_chart(
        "length-deciles", "Pass rate by output-length decile", labels, [d["pass_rate"] for d in deciles],
        percent=True, y_label="pass rate", x_label="output tokens (decile upper edge)", missing="no rollouts",
    )  # fmt: skip
    trunc = length["truncation"]
    trunc_chart = bar_chart(
        "truncation", "Pass rate of cut-off vs complete rollouts", ["cut off", "complete"],
        [trunc["pass_rate_cut_off"], trunc["pass_rate_complete"]], percent=True, y_label="pass rate",
        missing="no rollouts",
    )  # fmt: skip
    tokens = analysis.mean_tokens
    finite = np.isfinite(tokens) & (analysis.passes.band >= 0)
    heat = "<p class=muted>No token counts.</p>"
    if bool(finite.any()):
        top = float(np.quantile(tokens[finite], 0.99)) or 1.0
        edges = np.linspace(0.0, top, 21)
        column = np.clip(np.searchsorted(edges, tokens[finite], side="right") - 1, 0, 19)
        counts = np.zeros((7, 20), np.int64)
        np.add.at(counts, (analysis.passes.band[finite], column), 1)
        heat = heatmap(
            "length-heatmap", "Tasks by pass-rate band and mean output tokens",
            counts.tolist(), edges.tolist(),
            list(BAND_LABELS), x_label="mean output tokens of the task", y_label="pass-rate band",
        )  # fmt: skip
    w, sp = length["within_task"], length["spearman"]
    facts = [
        ("rollouts with token counts", _num(length["rollouts"])),
        ("cut off", f"{_num(trunc['cut_off'])} ({_share(trunc['share'])})"),
        ("tokens per solve", _num(length["tokens_per_solve"], 1)),
        ("tasks with passing and failing rollouts", _num(w["tasks"])),
        ("median (passing − failing) output tokens within a task", _num(w["median_difference"], 1)),
        ("Wilcoxon signed-rank p", _num(w["wilcoxon_p"], 4)),
        ("Spearman, pooled (description: rollouts of a task are not independent)", _num(sp["pooled"], 3)),
        ("Spearman, within task", _num(sp["within_task"], 3)),
        ("within-task permutation p", _num(sp["within_task_p"], 4)),
    ]
    table = "".join(f"<tr><td>{k}</td><td class=num>{v}</td></tr>" for k, v in facts)
    return (
        f"<h2>Reward vs length</h2><div class=grid2>{decile_chart}{trunc_chart}{heat}"
        f"<table>{table}</table></div>"
    )


_REPEAT_KEYS = ("sample_count", "mean/reward", "ci_low_95/reward", "ci_high_95/reward", "mean/output_tokens")


def metrics_section(agent_metrics: Any, repeat_metrics: Any) -> str:
    out = ["<h2>Agent- and repeat-level metrics (from the profile)</h2>"]
    if not isinstance(agent_metrics, list) or not agent_metrics:
        out.append(
            "<p class=muted>No <code>*_agent_metrics.json</code> beside the rollouts: run 'gym eval"
            " profile'.</p>"
        )
    else:
        for entry in agent_metrics[:20]:
            if not isinstance(entry, dict):
                continue
            ref = entry.get("agent_ref")
            name = ref.get("name") if isinstance(ref, dict) else entry.get("_ng_environment_server", "agent")
            keys = [k for k, v in entry.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
            fields = sorted({k.split("/", 1)[1] for k in keys if k.count("/") == 1})
            stats = ("mean", "median", "std", "min", "max")
            rows = "".join(
                f"<tr><td>{escape(f)}</td>"
                + "".join(f"<td class=num>{_num(entry.get(f'{s}/{f}'))}</td>" for s in stats)
                + "</tr>"
                for f in fields
            )
            extra = "".join(
                f"<tr><td>{escape(k)}</td><td class=num>{_num(entry[k])}</td></tr>"
                for k in keys
                if k.count("/") != 1
            )
            out.append(
                f"<h3>{escape(str(name))}</h3><table><tr><th>field</th>"
                + "".join(f"<th class=num>{s}</th>" for s in stats)
                + f"</tr>{rows}</table><details><summary>across-repeat statistics</summary><table>{extra}"
                "</table></details>"
            )
    if isinstance(repeat_metrics, list) and repeat_metrics:
        head = "".join(f"<th class=num>{escape(k)}</th>" for k in _REPEAT_KEYS)
        rows = "".join(
            f"<tr><td>{_num(e.get('_ng_rollout_index'))}</td>"
            + "".join(f"<td class=num>{_num(e.get(k))}</td>" for k in _REPEAT_KEYS)
            + "</tr>"
            for e in repeat_metrics[:200]
            if isinstance(e, dict)
        )
        out.append(f"<h3>Repeat level</h3><table><tr><th>repeat</th>{head}</tr>{rows}</table>")
    return "".join(out)
