"""``<stem>_report.html``: one self-contained page (inline CSS, inline SVG charts, one inline script).

Contract of :func:`start_report(handle, paths, analysis, scan)`: writes the page to ``handle`` (the
caller's temp file) in two steps — all but the profile's metrics now, the rest when the returned call is
made. It holds
run identity and counts, the health section (:mod:`.report_health`: verdict, rollout- and task-level
counts, findings with example rollouts), the band histogram (settled tasks darker), the GRPO forecast
curve, reward-vs-length charts, the profile's agent- and repeat-level metrics (when the profile files sit
beside the rollouts) and a task browser over every task, which shows what each task is — its prompt and
its input row's other fields (:mod:`.report_tasks`, for the first :data:`~.report_tasks.TASK_ROWS` tasks
and the findings' example tasks) — and searches them. Response text is embedded for at most
:data:`TEXT_ROLLOUTS` rollouts (the finding examples first, then the first tasks), each cut at
:data:`TEXT_CHARS` characters; other rollouts show their line number. When the analysis provides how many
more repeats would settle each task (``Analysis.repeats_to_settle``, see :mod:`.document`), the browser
shows it per task and the bands section overall. The page loads nothing from anywhere: no CDN, no font,
no request.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from html import escape
from pathlib import Path
from typing import IO, Any

import numpy as np
import orjson

from rewardgym.analysis.columns import RolloutColumns
from rewardgym.analysis.document import Analysis
from rewardgym.analysis.extract import response_text
from rewardgym.analysis.report_health import health_section
from rewardgym.analysis.report_page import CSS, JS, csp_meta
from rewardgym.analysis.report_tasks import TASK_ROWS, TaskInput, task_inputs
from rewardgym.analysis.scan import Scan
from rewardgym.analysis.sidecars import AnalysisPaths, read_json
from rewardgym.profile import BAND_LABELS

TEXT_ROLLOUTS = 2000
TEXT_CHARS = 1500
FLAG_BITS = {"cut": 1, "unhealthy": 2, "identical": 4, "zerocut": 8, "noanswer": 16}


def _texts(path: Path, columns: RolloutColumns, rows: list[int]) -> dict[int, str]:
    """Response text of the given column rows, read back by byte offset."""
    out: dict[int, str] = {}
    with open(path, "rb") as handle:
        for row in rows:
            handle.seek(int(columns.offset[row]))
            try:
                parsed = orjson.loads(handle.readline())
            except orjson.JSONDecodeError:
                continue
            text, reasoning = response_text(parsed)
            shown = text if text.strip() else (f"[reasoning only] {reasoning}" if reasoning.strip() else "")
            out[row] = shown[:TEXT_CHARS] + ("…" if len(shown) > TEXT_CHARS else "")
    return out


def _text_rows(analysis: Analysis, columns: RolloutColumns) -> list[int]:
    chosen: dict[int, None] = {}
    for finding in analysis.health.findings:
        for task, rollout in finding.examples:
            start = int(np.searchsorted(columns.task, task))
            end = int(np.searchsorted(columns.task, task, side="right"))
            for i in range(start, end):
                if rollout in (None, int(columns.rollout[i])):
                    chosen.setdefault(i)
    for i in range(min(len(columns), TEXT_ROLLOUTS)):
        if len(chosen) >= TEXT_ROLLOUTS:
            break
        chosen.setdefault(i)
    return sorted(chosen)[:TEXT_ROLLOUTS] if len(chosen) > TEXT_ROLLOUTS else sorted(chosen)


def _task_flags(analysis: Analysis, columns: RolloutColumns) -> np.ndarray:
    tasks = analysis.passes.task.shape[0]
    pos = analysis.task_pos
    flags = np.zeros(tasks, np.int64)

    def per_task(mask: np.ndarray) -> np.ndarray:
        return np.bincount(pos[mask], minlength=tasks) > 0

    flags |= per_task(columns.cut_off) * FLAG_BITS["cut"]
    flags |= per_task(analysis.health.unhealthy) * FLAG_BITS["unhealthy"]
    flags |= analysis.health.task_flags["repeats_identical"] * FLAG_BITS["identical"]
    flags |= analysis.health.task_flags["task_zero_all_cut_off"] * FLAG_BITS["zerocut"]
    flags |= per_task(columns.extracted == 0) * FLAG_BITS["noanswer"]
    return flags


def _data(
    analysis: Analysis, columns: RolloutColumns, texts: dict[int, str], inputs: dict[int, TaskInput]
) -> Iterator[bytes]:
    """The page's data as the JSON ``orjson`` gives the whole payload, a column at a time: at 10^6
    rollouts it is 40 MB, which as one string (and its escaped copy, and the rounded columns) would all be
    held at once. Only strings can hold ``<``: escaping it in them keeps "</script>" and "<!--" in
    response text from ending or confusing the script block."""
    p = analysis.passes
    starts = np.searchsorted(columns.task, p.task)
    tasks: dict[str, Callable[[], Any]] = {
        "t": lambda: p.task, "n": lambda: p.n, "s": lambda: p.passes, "rate": lambda: np.round(p.rate, 4),
        "lo": lambda: np.round(p.low, 4), "hi": lambda: np.round(p.high, 4), "band": lambda: p.band,
        "settled": lambda: p.settled.astype(np.int8), "pe": lambda: np.round(analysis.p_all_equal, 3),
        "tok": lambda: np.round(analysis.mean_tokens, 1),
        "tps": lambda: np.round(analysis.tokens_per_solve, 1),
        "flags": lambda: _task_flags(analysis, columns),
        "ro": lambda: np.append(starts, len(columns)).astype(np.int64),
    }  # fmt: skip
    if analysis.repeats_to_settle is not None:  # the statistics' hook (see document.Analysis)
        settle = analysis.repeats_to_settle
        tasks["more"] = lambda: np.where(np.isfinite(settle), np.round(settle), -1).astype(np.int64)
    rollouts: dict[str, Callable[[], Any]] = {
        "r": lambda: columns.rollout, "w": lambda: np.round(columns.reward, 4),
        "p": lambda: analysis.passed.astype(np.int8), "o": lambda: columns.output_tokens,
        "c": lambda: columns.cut_off.astype(np.int8), "h": lambda: analysis.health.unhealthy.astype(np.int8),
        "l": lambda: columns.line,
    }  # fmt: skip
    yield b'{"band_labels":' + orjson.dumps(list(BAND_LABELS)).replace(b"<", b"\\u003c")
    for name, table in (("tasks", tasks), ("rollouts", rollouts)):
        yield b',"' + name.encode() + b'":{'
        for position, (key, make) in enumerate(table.items()):
            value = orjson.dumps(make(), option=orjson.OPT_SERIALIZE_NUMPY)
            yield (b"," if position else b"") + b'"' + key.encode() + b'":' + value
        yield b"}"
    yield b',"texts":' + orjson.dumps({str(k): v for k, v in texts.items()}).replace(b"<", b"\\u003c")
    yield b',"row_task":' + orjson.dumps({str(k): int(analysis.task_pos[k]) for k in texts})
    described = {
        "q": {str(k): v.prompt for k, v in inputs.items()},
        "m": {str(k): v.messages for k, v in inputs.items()},
        "f": {str(k): v.fields for k, v in inputs.items()},
    }
    yield b',"inputs":' + orjson.dumps(described).replace(b"<", b"\\u003c") + b"}"


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else escape(str(value))


_TIPS = {
    "collection time": "wall time of the collection: from the materialized inputs being written to the "
    "rollouts file's last write (not the time this analysis or the profile took)",
}


def _facts(doc: dict[str, Any]) -> str:
    run = doc["run"]
    materialized = run["materialized_rollouts"]
    completion = None if not materialized else run["counted_rollouts"] / materialized
    failures = run["failures"]
    by_class = ", ".join(f"{k} {v}" for k, v in failures["by_class"].items()) or "none"
    items = [
        ("tasks", _fmt(run["tasks"])),
        ("rollouts", _fmt(run["rollout_lines"])),
        ("materialized", _fmt(materialized)),
        ("completion", "–" if completion is None else f"{100 * completion:.1f} %"),
        ("failures", f"{failures['total']:,} ({escape(by_class)})"),
        ("collection time", "–" if run["wall_time_s"] is None else f"{run['wall_time_s']:,.1f} s"),
        ("pass rate", "–" if doc["uncertainty"]["pass_rate_overall"] is None
         else f"{100 * doc['uncertainty']['pass_rate_overall']:.1f} %"),
        ("agents", escape(", ".join(run["agents"]) or "–")),
    ]  # fmt: skip
    settings = ""
    if run.get("run_file"):
        shown = escape(orjson.dumps(run["run_file"], option=orjson.OPT_INDENT_2).decode())
        settings = f"<details><summary>run settings (_run.json)</summary><pre>{shown}</pre></details>"
    return (
        '<div class="facts">'
        + "".join(
            f'<div title="{escape(_TIPS.get(k, ""))}"><span class=muted>{k}</span><b>{v}</b></div>'
            for k, v in items
        )
        + "</div>"
        + settings
    )


def _browser() -> str:
    bands = "".join(f'<option value="{i}">{escape(label)}</option>' for i, label in enumerate(BAND_LABELS))
    flags = (("settled", "settled"), ("unsettled", "unsettled"), ("cut", "any rollout cut off"),
             ("unhealthy", "any rollout unhealthy"), ("identical", "identical repeats"),
             ("zerocut", "0 %, all cut off"), ("noanswer", "no extracted answer"))  # fmt: skip
    options = "".join(f'<option value="{k}">{escape(v)}</option>' for k, v in flags)
    columns = (("t", "task"), ("s", "passes"), ("rate", "rate"), ("band", "band"), ("lo", "95 % interval"),
               ("settled", "settled"), ("pe", "P(no signal)"), ("tok", "mean tokens"),
               ("tps", "tokens/solve"),
               ("flags", "flags"), ("q", "prompt"))  # fmt: skip
    head = "".join(f'<span data-key="{k}">{escape(v)}</span>' for k, v in columns)
    return (
        '<h2>Tasks</h2><div class="controls"><label>band <select id="f-band"><option value="">all</option>'
        f'{bands}</select></label><label>show <select id="f-flag"><option value="">all tasks</option'
        f">{options}"
        '</select></label><label>search <input id="f-text" type="search" placeholder="task index, prompt,'
        ' expected answer or response text">'
        '</label><span id="shown-count" class="muted"></span></div>'
        f'<div class="head">{head}</div><div id="viewport"><div id="spacer"></div></div><div'
        ' id="detail"></div>'
    )


def _opening(
    analysis: Analysis,
    columns: RolloutColumns,
    texts: dict[int, str],
    inputs: dict[int, TaskInput],
    unreadable: int,
) -> Iterator[bytes]:
    """The page up to the profile's metrics: everything the analysis alone decides, the task data last."""
    from rewardgym.analysis.report_sections import bands_section, grpo_section, length_section

    doc = analysis.document
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"{csp_meta(JS)}<title>rewardgym analysis</title><style>{CSS}</style></head><body>"
    )
    body = (
        f"<header><h1>rewardgym analysis — {escape(Path(doc['run']['rollouts_file']).name)}</h1>"
        f"<div class=muted>{escape(doc['run']['rollouts_file'])} · generated {generated}</div"
        f">{_facts(doc)}</header>"
        f"<main><section id=health>{health_section(analysis, columns, texts, unreadable)}</section>"
        f"<section id=bands>{bands_section(doc)}</section><section id=grpo>{grpo_section(doc)}</section>"
        f"<section id=length>{length_section(doc, analysis)}</section>"
    )
    # The task data (inert JSON, read by the script at the end) sits before the metrics section so that
    # all of the page but the profile's metrics can be written before the profile has written them.
    yield (head + body).encode()
    yield b'<script type="application/json" id="report-data">'
    yield from _data(analysis, columns, texts, inputs)
    yield b"</script>"


def _closing(agent_metrics: Any, repeat_metrics: Any) -> bytes:
    """The rest of the page: the profile's metrics, the task browser and the script."""
    from rewardgym.analysis.report_sections import metrics_section

    return (
        f"<section id=metrics>{metrics_section(agent_metrics, repeat_metrics)}</section>"
        f"<section id=tasks>{_browser()}</section></main><script>{JS}</script></body></html>\n"
    ).encode()


def _described_tasks(analysis: Analysis) -> list[int]:
    """Task positions whose input row the page embeds: the findings' example tasks, then the first."""
    chosen = dict.fromkeys(
        int(p)
        for f in analysis.health.findings
        for task, _ in f.examples
        for p in np.flatnonzero(analysis.passes.task == task)[:1].tolist()
    )
    chosen.update(dict.fromkeys(range(min(analysis.passes.task.shape[0], TASK_ROWS))))
    return list(chosen)[:TASK_ROWS]


def start_report(
    handle: IO[bytes], paths: AnalysisPaths, analysis: Analysis, scan: Scan
) -> Callable[[], None]:
    """Write the page but the profile's metrics to ``handle`` (see module doc) and return the call that
    writes the rest: it reads ``<stem>_agent_metrics.json`` / ``<stem>_repeat_level_metrics.json`` then,
    so that ``profile --report`` can write the bulk of the page while the profile still writes those."""
    columns = scan.columns
    texts = _texts(scan.path, columns, _text_rows(analysis, columns))
    given = analysis.document["run"].get("inputs_file")
    inputs, _ = task_inputs(
        Path(given) if given else paths.materialized, scan.path, columns, analysis.passes.task,
        _described_tasks(analysis),
    )  # fmt: skip
    for piece in _opening(analysis, columns, texts, inputs, len(scan.unreadable)):
        handle.write(piece)

    def finish() -> None:
        handle.write(_closing(read_json(paths.agent_metrics), read_json(paths.repeat_metrics)))

    return finish
