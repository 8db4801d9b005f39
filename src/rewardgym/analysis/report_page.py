# ruff: noqa: E501 - CSS and JavaScript source, kept in their own line lengths
"""The static parts of the HTML report: its style sheet and its script (task browser). Pure constants.

The script reads the ``<script type="application/json" id="report-data">`` block once and renders only the
visible rows of the task table (a fixed row height inside a scrolling box), so 250,000 tasks stay quick;
sorting and filtering work on index arrays. It makes no request of any kind.
"""

CSS = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#d9dee7;--bg:#f6f7fa;--bar:#9db4d8;--strong:#2f5fa8;--bad:#b3261e;
--warn:#9a6700;--ok:#1a7f37}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);
background:var(--bg)}header{background:#fff;border-bottom:1px solid var(--line);padding:18px 28px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:0 0 10px}main{padding:18px 28px;display:grid;gap:18px}
section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:16px 18px}
.muted{color:var(--muted)}.facts{display:flex;flex-wrap:wrap;gap:8px 26px;margin-top:8px}
.facts b{display:block;font-size:18px}.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:14px}
table{border-collapse:collapse;font-size:13px}td,th{padding:3px 10px 3px 0;text-align:left;vertical-align:top}
th{color:var(--muted);font-weight:600}td.num,th.num{text-align:right}
.verdict{display:inline-block;padding:2px 10px;border-radius:12px;font-weight:600;color:#fff}
.v-healthy{background:var(--ok)}.v-warnings{background:var(--warn)}.v-unhealthy{background:var(--bad)}
.finding{border-left:4px solid var(--warn);padding:6px 12px;margin:10px 0;background:#fffaf0}
.finding.error{border-color:var(--bad);background:#fff5f5}.fix{color:var(--muted)}
pre{white-space:pre-wrap;word-break:break-word;margin:0;font-size:12px;max-height:160px;overflow:auto;
background:var(--bg);padding:4px 6px;border-radius:4px}
svg.chart{max-width:100%;height:auto;background:#fff}svg .grid{stroke:#eceff4}svg .tick{font-size:11px;fill:var(--muted)}
svg .axis{font-size:12px;fill:var(--fg)}svg .value{font-size:11px;fill:var(--fg)}svg .bar{fill:var(--bar)}
svg .bar-strong{fill:var(--strong)}svg .line{fill:none;stroke-width:2}svg .line.s0,svg .dot.s0{stroke:var(--strong);fill:var(--strong)}
svg .line.s1,svg .dot.s1{stroke:#d0792b;fill:#d0792b}svg .line.s2,svg .dot.s2{stroke:#3c9a5f;fill:#3c9a5f}
svg .line{fill:none!important}svg .line.s1{stroke-dasharray:6 4}svg .legend{font-size:12px}svg .legend.s0{fill:var(--strong)}svg .legend.s1{fill:#d0792b}
svg .legend.s2{fill:#3c9a5f}svg .cell{fill:var(--strong)}svg .missing{font-size:11px;fill:var(--muted)}
.controls{display:flex;flex-wrap:wrap;gap:10px;align-items:center;margin-bottom:8px}
.controls input,.controls select{font:inherit;padding:3px 6px}
#viewport{height:480px;overflow-y:auto;border:1px solid var(--line);position:relative;background:#fff}
#spacer{position:relative}.row{position:absolute;left:0;right:0;height:24px;display:grid;
grid-template-columns:var(--cols);gap:6px;padding:2px 8px;cursor:pointer;
border-bottom:1px solid #f0f2f6;white-space:nowrap;overflow:hidden}.row:hover{background:#eef3fb}
.row span{overflow:hidden;text-overflow:ellipsis}
#tasks{--cols:60px 60px 60px 80px 120px 80px 80px 80px 90px 130px minmax(160px,1fr)}
#tasks.with-more{--cols:60px 60px 60px 80px 120px 80px 80px 80px 90px 130px 90px minmax(160px,1fr)}
.head{display:grid;grid-template-columns:var(--cols);gap:6px;padding:4px 8px;
font-weight:600;color:var(--muted);border:1px solid var(--line);border-bottom:0;background:var(--bg)}
.task-input{display:grid;grid-template-columns:1fr 1fr;gap:12px;margin:8px 0}.task-input pre{max-height:320px}
.head span{cursor:pointer;user-select:none}.head span[data-dir]::after{content:attr(data-dir)}
#detail{margin-top:12px}.cut{color:var(--bad);font-weight:600}.pass{color:var(--ok);font-weight:600}
"""

JS = r"""
(function(){
"use strict";
const D = JSON.parse(document.getElementById("report-data").textContent);
const T = D.tasks, R = D.rollouts, N = T.t.length, ROW = 24;
const BANDS = D.band_labels;
const FLAG = {cut:1, unhealthy:2, identical:4, zerocut:8, noanswer:16};
let order = new Int32Array(N); for (let i = 0; i < N; i++) order[i] = i;
let shown = order, sortKey = "t", sortDir = 1;
const vp = document.getElementById("viewport"), spacer = document.getElementById("spacer");
const count = document.getElementById("shown-count");
function fmt(v, d){ return v === null || v === undefined ? "–" : Number(v).toFixed(d); }
function pct(v){ return v === null || v === undefined ? "–" : (100 * v).toFixed(0) + " %"; }
function flagText(f){ const out = [];
  if (f & FLAG.cut) out.push("cut-off"); if (f & FLAG.unhealthy) out.push("unhealthy");
  if (f & FLAG.identical) out.push("identical"); if (f & FLAG.zerocut) out.push("0 %, all cut");
  if (f & FLAG.noanswer) out.push("no answer"); return out.join(", "); }
const Q = D.inputs.q, M = D.inputs.m, F = D.inputs.f, MORE = T.more;
if (MORE) { document.getElementById("tasks").classList.add("with-more");
  const s = document.createElement("span"); s.dataset.key = "more"; s.textContent = "more repeats to settle";
  const head = document.querySelector(".head"); head.insertBefore(s, head.lastElementChild); }
function moreText(v){ return v === undefined ? "" : v < 0 ? "never" : v === 0 ? "settled" : "+" + v; }
function render(){
  spacer.style.height = (shown.length * ROW) + "px";
  const first = Math.max(0, Math.floor(vp.scrollTop / ROW) - 5);
  const last = Math.min(shown.length, first + Math.ceil(vp.clientHeight / ROW) + 10);
  const parts = [];
  for (let k = first; k < last; k++) {
    const i = shown[k];
    parts.push('<div class="row" data-i="' + i + '" style="top:' + (k * ROW) + 'px"><span>' + T.t[i] +
      '</span><span>' + T.s[i] + "/" + T.n[i] + '</span><span>' + pct(T.rate[i]) + '</span><span>' +
      (BANDS[T.band[i]] || "–") + '</span><span>' + pct(T.lo[i]) + " – " + pct(T.hi[i]) + '</span><span>' +
      (T.settled[i] ? "settled" : "unsettled") + '</span><span>' + fmt(T.pe[i], 2) + '</span><span>' +
      fmt(T.tok[i], 0) + '</span><span>' + fmt(T.tps[i], 0) + '</span><span>' + flagText(T.flags[i]) +
      "</span>" + (MORE ? "<span>" + moreText(MORE[i]) + "</span>" : "") + '<span title="' +
      esc(Q[i] || "") + '">' + esc(Q[i] || "") + "</span></div>");
  }
  spacer.innerHTML = parts.join("");
  count.textContent = shown.length.toLocaleString() + " of " + N.toLocaleString() + " tasks";
}
function textHits(q){ const hit = new Set();
  for (const [row, text] of Object.entries(D.texts)) { if (text.toLowerCase().includes(q)) hit.add(D.row_task[row]); }
  for (const table of [M, F]) for (const [i, text] of Object.entries(table)) {
    if (text.toLowerCase().includes(q)) hit.add(Number(i)); }
  return hit; }
function applyFilters(){
  const band = document.getElementById("f-band").value, flag = document.getElementById("f-flag").value;
  const q = document.getElementById("f-text").value.trim().toLowerCase();
  const hits = q ? textHits(q) : null;
  const keep = [];
  for (let k = 0; k < order.length; k++) {
    const i = order[k];
    if (band !== "" && T.band[i] !== Number(band)) continue;
    if (flag === "settled" && !T.settled[i]) continue;
    if (flag === "unsettled" && T.settled[i]) continue;
    if (flag in FLAG && !(T.flags[i] & FLAG[flag])) continue;
    if (q && !String(T.t[i]).includes(q) && !hits.has(i)) continue;
    keep.push(i);
  }
  shown = Int32Array.from(keep); vp.scrollTop = 0; render();
}
function sortBy(key){
  sortDir = key === sortKey ? -sortDir : 1; sortKey = key;
  const col = key === "q" ? Array.from({length: N}, (_, i) => Q[i] === undefined ? null : Q[i]) : T[key];
  const idx = Array.from(order);
  idx.sort((a, b) => { const x = col[a], y = col[b];
    if (x === y) return T.t[a] - T.t[b]; if (x === null) return 1; if (y === null) return -1;
    return x < y ? -sortDir : sortDir; });
  order = Int32Array.from(idx);
  document.querySelectorAll(".head span").forEach(s => s.removeAttribute("data-dir"));
  document.querySelector('.head span[data-key="' + key + '"]').setAttribute("data-dir", sortDir > 0 ? " ▲" : " ▼");
  applyFilters();
}
function esc(s){ return String(s).replace(/[&<>"]/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;"}[c])); }
function openTask(i){
  const a = T.ro[i], b = T.ro[i + 1];
  const rows = [];
  for (let j = a; j < b; j++) {
    const text = D.texts[j];
    rows.push("<tr><td>" + R.r[j] + "</td><td class=num>" + fmt(R.w[j], 3) + "</td><td>" +
      (R.p[j] ? '<span class="pass">pass</span>' : "fail") + "</td><td class=num>" + fmt(R.o[j], 0) + "</td><td>" +
      (R.c[j] ? '<span class="cut">✂ cut off</span>' : "") + "</td><td>" + (R.h[j] ? "unhealthy" : "") +
      "</td><td>" + (text === undefined ? '<span class="muted">text not embedded — line ' + R.l[j] +
      " of the rollouts file</span>" : "<pre>" + esc(text) + "</pre>") + "</td></tr>");
  }
  const box = document.getElementById("detail");
  const about = M[i] === undefined ? '<p class="muted">Input row not embedded (the page holds the first ' +
    "tasks' rows).</p>" : '<div class="task-input"><div><h3>prompt</h3><pre id="detail-prompt">' + esc(M[i]) +
    '</pre></div><div><h3>expected answer and other fields</h3><pre id="detail-fields">' +
    esc(F[i] || "(none)") + "</pre></div></div>";
  box.innerHTML = "<h2>Task " + T.t[i] + " — " + T.s[i] + " of " + T.n[i] + " passed (" + pct(T.rate[i]) +
    ", 95 % interval " + pct(T.lo[i]) + " – " + pct(T.hi[i]) +
    (MORE ? "; more repeats to settle: " + moreText(MORE[i]) : "") + ")</h2>" + about +
    "<table id=detail-table><tr><th>rollout</th>" +
    "<th class=num>reward</th><th>result</th><th class=num>output tokens</th><th>cut off</th><th>health</th>" +
    "<th>response</th></tr>" + rows.join("") + "</table>";
  box.scrollIntoView({block: "nearest"});
}
vp.addEventListener("scroll", () => window.requestAnimationFrame(render));
spacer.addEventListener("click", e => { const row = e.target.closest(".row"); if (row) openTask(Number(row.dataset.i)); });
document.querySelectorAll(".head span").forEach(s => s.addEventListener("click", () => sortBy(s.dataset.key)));
["f-band", "f-flag"].forEach(id => document.getElementById(id).addEventListener("change", applyFilters));
let timer = 0;
document.getElementById("f-text").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(applyFilters, 150); });
render();
})();
"""
