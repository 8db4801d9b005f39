# ruff: noqa: E501 - CSS and JavaScript source, kept in their own line lengths
"""The static parts of the compare page: extra style rules (on top of the analysis report's) and its script.

The script reads the ``<script type="application/json" id="compare-data">`` block once and lists the changed
tasks of the chosen comparison, filtered by transition and by text (key, task index or prompt), at most
:data:`SHOWN_ROWS` rows at a time. It makes no request of any kind.
"""

SHOWN_ROWS = 500

CSS = """
.verdict.v-improved{background:var(--ok)}.verdict.v-regressed{background:var(--bad)}
.verdict.v-no{background:var(--muted)}svg .cell.diag{stroke:var(--fg);stroke-width:1}
svg .value.light{fill:#fff}svg .diagonal{stroke:var(--muted);stroke-dasharray:4 4}
svg .pt line{stroke-width:1.2;stroke-opacity:.7}svg .pt circle{fill-opacity:.8}
svg .t-unchanged line{stroke:#7f8ba0}svg .t-unchanged circle{fill:#7f8ba0}
svg .t-improved line,svg .t-newly_solved line{stroke:var(--ok)}svg .t-improved circle,svg .t-newly_solved circle{fill:var(--ok)}
svg .t-regressed line,svg .t-newly_failed line{stroke:var(--bad)}svg .t-regressed circle,svg .t-newly_failed circle{fill:var(--bad)}
#changed-wrap{max-height:600px;overflow:auto;border:1px solid var(--line)}#changed td{white-space:nowrap}#changed td.prompt{white-space:normal;max-width:520px}
.up{color:var(--ok);font-weight:600}.down{color:var(--bad);font-weight:600}
"""

JS = r"""
(function(){
"use strict";
const D = JSON.parse(document.getElementById("compare-data").textContent);
const MAX = D.shown_rows;
const body = document.getElementById("changed-body"), count = document.getElementById("changed-count");
const fc = document.getElementById("f-comparison"), ft = document.getElementById("f-transition"),
  fq = document.getElementById("f-text");
function pct(v){ return v === null || v === undefined ? "–" : (100 * v).toFixed(0) + " %"; }
function esc(s){ return String(s).replace(/[&<>"]/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;"}[c])); }
function num(v){ return v === null || v === undefined ? "–" : (v < 0.001 ? v.toExponential(1) : v.toFixed(3)); }
function render(){
  const c = D.comparisons[Number(fc.value)], R = c.rows, N = R.t.length;
  const want = ft.value, q = fq.value.trim().toLowerCase();
  const parts = []; let hits = 0;
  for (let i = 0; i < N; i++) {
    const name = D.transitions[R.tr[i]], diff = R.rb[i] - R.ra[i];
    if (want === "up" && !(diff > 0)) continue;
    if (want === "down" && !(diff < 0)) continue;
    if (want !== "" && want !== "up" && want !== "down" && name !== want) continue;
    if (q && !(String(R.ta[i]) === q || String(R.tb[i]) === q || R.k[i].startsWith(q) ||
               R.t[i].toLowerCase().includes(q))) continue;
    hits++;
    if (parts.length >= MAX) continue;
    parts.push('<tr data-transition="' + name + '"><td>' + R.ta[i] + "</td><td>" + R.tb[i] + "</td><td class=num>" +
      R.sa[i] + "/" + R.na[i] + " (" + pct(R.ra[i]) + ")</td><td class=num>" + R.sb[i] + "/" + R.nb[i] + " (" +
      pct(R.rb[i]) + ')</td><td class="num ' + (diff > 0 ? "up" : diff < 0 ? "down" : "") + '">' +
      (diff > 0 ? "+" : "") + (100 * diff).toFixed(0) + " pp</td><td class=num>" + num(R.p[i]) + "</td><td class=num>" +
      num(R.q[i]) + "</td><td class=num>" + R.pb[i].toFixed(2) + "</td><td>" + name.replace("_", " ") +
      '</td><td class="prompt">' + esc(R.t[i]) + "</td></tr>");
  }
  body.innerHTML = parts.join("");
  count.textContent = (hits > MAX ? "first " + MAX + " of " : "") + hits.toLocaleString() + " of " +
    N.toLocaleString() + " listed tasks" + (c.cut ? " (list cut at " + N.toLocaleString() + " of " +
    c.changed.toLocaleString() + " changed)" : "");
}
[fc, ft].forEach(e => e.addEventListener("change", render));
let timer = 0;
fq.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(render, 150); });
render();
})();
"""
