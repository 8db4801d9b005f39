"""``compare.html``: one self-contained page of a comparison (inline CSS, inline SVG, one inline script).

Contract of :func:`render_page(document)` (pure; the caller writes the bytes crash-safely): the runs and
how their tasks matched (unmatched counts and examples), then per comparison its verdict with the
difference of mean pass rate, its interval and the minimum detectable difference, the transition counts,
the band-to-band matrix and the per-task scatter A vs B with intervals; last, the changed tasks (observed
rates differ) of the chosen comparison, most significant first, filterable by transition and text. At
most :data:`MAX_ROWS` changed tasks per comparison are embedded. The page loads nothing from anywhere
(a Content-Security-Policy forbids every request), in the analysis report's style.
"""

from __future__ import annotations

import datetime as dt
from html import escape
from typing import Any

import numpy as np
import orjson

from rewardgym.analysis.report_page import CSS as REPORT_CSS
from rewardgym.analysis.report_page import csp_meta
from rewardgym.compare.charts import band_matrix_svg, scatter_svg
from rewardgym.compare.document import power_sentence
from rewardgym.compare.page import CSS, JS, SHOWN_ROWS

MAX_ROWS = 20_000


def _rows(document: dict[str, Any], index: int) -> dict[str, Any]:
    comparison = document["comparisons"][index]
    per_task = document["per_task"]
    a = per_task["runs"][comparison["a_run"]]
    b = per_task["runs"][comparison["b_run"]]
    tests = per_task["comparisons"][index]
    d = b["rate"] - a["rate"]
    changed = np.flatnonzero(d != 0)
    order = changed[np.lexsort((-np.abs(d[changed]), tests["q_value"][changed]))][:MAX_ROWS]
    keys = per_task["key"]
    shown = per_task["shown"]
    rows = {
        "k": [keys[i] for i in order.tolist()], "t": [shown[i] for i in order.tolist()],
        "ta": a["task"][order], "tb": b["task"][order], "sa": a["passes"][order], "na": a["n"][order],
        "ra": np.round(a["rate"][order], 4), "sb": b["passes"][order], "nb": b["n"][order],
        "rb": np.round(b["rate"][order], 4), "p": tests["p_value"][order], "q": tests["q_value"][order],
        "pb": np.round(tests["p_b_better"][order], 3), "tr": tests["transition"][order],
    }  # fmt: skip
    return {"rows": rows, "changed": int(changed.size), "cut": bool(changed.size > MAX_ROWS)}


def _pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def _pp(value: float) -> str:
    return f"{100 * value:+.1f} pp"


def _runs(document: dict[str, Any]) -> str:
    rows = []
    for run in document["runs"]:
        examples = "; ".join(f"task {e['task']}: {e['shown']}" for e in run["unmatched_examples"][:3])
        rows.append(
            f"<tr><td>{escape(run['label'])}</td><td>{escape(run['kind'])}</td><td>{escape(run['path'])}</td>"
            f"<td class=num>{run['tasks']:,}</td><td class=num>{run['counted_rollouts']:,}</td>"
            f"<td class=num>{run['unmatched_tasks']:,}</td><td class=num>{run['ambiguous_tasks']:,}</td>"
            f"<td>{escape(examples)}</td></tr>"
        )
    match = document["matching"]
    return (
        f"<h2>Runs</h2><p>Tasks matched by {escape(match['by'])}: <b>{match['matched_tasks']:,}</b> in "
        "every run"
        f" ({match['unmatched_tasks']:,} unmatched, {match['matched_without_rollouts']:,} matched without"
        " counted rollouts; both left out).</p><table id=runs><tr><th>run</th><th>kind</th><th>file</th>"
        "<th class=num>tasks</th><th class=num>rollouts</th><th class=num>unmatched</th>"
        "<th class=num>ambiguous</th><th>unmatched examples</th></tr>" + "".join(rows) + "</table>"
    )


def _comparison(document: dict[str, Any], index: int) -> str:
    c = document["comparisons"][index]
    o = c["overall"]
    verdict = o["verdict"]
    css = {"improved": "v-improved", "regressed": "v-regressed"}.get(verdict, "v-no")
    level = f"{100 * o['level']:g} %"
    transitions = "".join(
        f"<div><span class=muted>{escape(k.replace('_', ' '))}</span><b>{v:,}</b></div>"
        for k, v in c["transitions"].items()
    )
    obs = c["observed"]
    per_task = document["per_task"]
    a, b = per_task["runs"][c["a_run"]], per_task["runs"][c["b_run"]]
    code = per_task["comparisons"][index]["transition"]
    labels = c["band_matrix"]["labels"]
    return (
        f'<section class=comparison data-index="{index}"><h2>{escape(c["b"])} vs {escape(c["a"])} '
        f'<span class="verdict {css}">{escape(verdict)}</span></h2>'
        f"<p>Mean pass rate over {c['tasks']:,} tasks: A {_pct(o['mean_a'])}, B {_pct(o['mean_b'])}; "
        f"difference <b>{_pp(o['diff'])}</b> ({level} paired bootstrap interval over tasks "
        f"{_pp(o['ci_low'])} to {_pp(o['ci_high'])}, {o['bootstrap_replicates']:,} replicates, seed "
        f"{o['seed']}). {escape(power_sentence(o, capital=True))}.</p>"
        f"<p class=muted>Per task: Fisher exact test, Benjamini–Hochberg at FDR "
        f"{c['per_task_test']['fdr']:g}: {c['per_task_test']['significant']:,} significant. Observed: "
        f"{obs['up']:,} up, {obs['down']:,} down, {obs['same']:,} same.</p>"
        f'<div class="facts">{transitions}</div><div class="grid2">'
        f"<div>{band_matrix_svg(f'matrix-{index}', c['band_matrix']['counts'], labels)}</div>"
        f"<div>{scatter_svg(f'scatter-{index}', a, b, code, document['transition_names'], o['level'])}</div>"
        "</div></section>"
    )


def _browser(document: dict[str, Any]) -> str:
    comparisons = "".join(
        f'<option value="{k}">{escape(c["b"])} vs {escape(c["a"])}</option>'
        for k, c in enumerate(document["comparisons"])
    )
    names = [("", "all changed"), ("up", "observed up"), ("down", "observed down")]
    names += [(name, name.replace("_", " ")) for name in document["transition_names"]]
    options = "".join(f'<option value="{k}">{escape(v)}</option>' for k, v in names)
    head = ("task A", "task B", "A passes", "B passes", "Δ", "p", "q", "P(B>A)", "transition", "prompt / key")
    return (
        '<h2>Changed tasks</h2><div class="controls"><label>comparison <select id="f-comparison">'
        f'{comparisons}</select></label><label>show <select id="f-transition">{options}</select></label>'
        '<label>search <input id="f-text" type="search" placeholder="task index, key or prompt"></label>'
        '<span id="changed-count" class="muted"></span></div>'
        '<div id="changed-wrap"><table id="changed"><thead><tr>'
        + "".join(f"<th>{escape(h)}</th>" for h in head)
        + '</tr></thead><tbody id="changed-body"></tbody></table></div>'
    )


def render_page(document: dict[str, Any]) -> bytes:
    """The whole page (see module doc)."""
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    names = " vs ".join(run["label"] for run in document["runs"])
    sections = "".join(f"{_comparison(document, k)}" for k in range(len(document["comparisons"])))
    body = (
        f"<header><h1>rewardgym compare — {escape(names)}</h1><div class=muted>generated {generated}</div>"
        f"</header><main><section id=runs-section>{_runs(document)}</section>{sections}"
        f"<section id=tasks>{_browser(document)}</section></main>"
    )
    head = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"{csp_meta(JS)}<title>rewardgym compare</title><style>{REPORT_CSS}{CSS}</style></head><body>"
    )
    data = {
        "shown_rows": SHOWN_ROWS,
        "transitions": document["transition_names"],
        "comparisons": [_rows(document, k) for k in range(len(document["comparisons"]))],
    }
    raw = orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY).replace(b"<", b"\\u003c")
    return (
        head.encode() + body.encode() + b'<script type="application/json" id="compare-data">' + raw
        + b"</script><script>" + JS.encode() + b"</script></body></html>\n"
    )  # fmt: skip
