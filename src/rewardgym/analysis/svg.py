"""Inline SVG charts for the HTML report (pure string building; no I/O, no external library).

Every chart is a self-contained ``<svg>`` element with a ``<title>`` and ``data-chart`` naming it, axis
labels and numbers as text (readable without hovering), colours from CSS classes of the report. Legends and
colour keys sit outside the plot area (a band above it, a strip beside it), so they never cover data; a
bar without a value says so in words (``missing``, e.g. "no rollouts") instead of a dash.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

W, H = 560, 260
LEFT, RIGHT, TOP, BOTTOM = 52, 16, 18, 46


def _frame(name: str, title: str, body: list[str], width: int = W, height: int = H) -> str:
    return (
        f'<svg class="chart" data-chart="{escape(name)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>" + "".join(body) + "</svg>"
    )


def _y_axis(
    top: float, label: str, width: int = W, height: int = H, percent: bool = False, plot_top: int = TOP
) -> list[str]:
    out = []
    for k in range(5):
        value = top * k / 4
        y = height - BOTTOM - (height - plot_top - BOTTOM) * k / 4
        text = f"{100 * value:.0f} %" if percent else f"{value:,.0f}"
        out.append(f'<line class="grid" x1="{LEFT}" x2="{width - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{text}</text>')
    out.append(
        f'<text class="axis" x="12" y="{(height - BOTTOM + plot_top) / 2:.0f}" '
        f'transform="rotate(-90 12 {(height - BOTTOM + plot_top) / 2:.0f})" text-anchor="middle"'
        f">{escape(label)}</text>"
    )
    return out


def bar_chart(
    name: str,
    title: str,
    labels: Sequence[str],
    values: Sequence[float | None],
    *,
    highlight: Sequence[float] | None = None,
    y_label: str = "",
    percent: bool = False,
    x_label: str = "",
    missing: str = "no value",
) -> str:
    """Vertical bars; ``highlight`` draws a darker part of each bar (e.g. settled tasks); a ``None`` value
    is written as ``missing`` upright in its slot."""
    numbers = [v or 0.0 for v in values]
    top = 1.0 if percent else max(max(numbers, default=0.0), 1.0)
    if not percent:
        top = _nice(top)
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM
    step = plot_w / max(len(labels), 1)
    body = _y_axis(top, y_label, percent=percent)
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        x = LEFT + i * step + step * 0.15
        width = step * 0.7
        v = value or 0.0
        h = plot_h * v / top
        body.append(
            f'<rect class="bar" x="{x:.1f}" y="{H - BOTTOM - h:.1f}" width="{width:.1f}" height="{h:.1f}">'
            f"<title>{escape(label)}: {_fmt(value, percent)}</title></rect>"
        )
        if highlight is not None:
            hh = plot_h * highlight[i] / top
            body.append(
                f'<rect class="bar-strong" x="{x:.1f}" y="{H - BOTTOM - hh:.1f}" width="{width:.1f}" '
                f'height="{hh:.1f}"/>'
            )
        if value is None:
            cx, cy = x + width / 2, H - BOTTOM - 6
            body.append(
                f'<text class="missing" x="{cx:.1f}" y="{cy:.1f}" transform="rotate(-90 {cx:.1f} {cy:.1f})"'
                f' dominant-baseline="middle">{escape(missing)}</text>'
            )
        else:
            body.append(
                f'<text class="value" x="{x + width / 2:.1f}" y="{H - BOTTOM - h - 4:.1f}" '
                f'text-anchor="middle">{_fmt(value, percent)}</text>'
            )
        body.append(
            f'<text class="tick" x="{x + width / 2:.1f}" y="{H - BOTTOM + 14}" text-anchor="middle">'
            f"{escape(label)}</text>"
        )
    if x_label:
        body.append(
            f'<text class="axis" x="{LEFT + plot_w / 2:.0f}" y="{H - 8}" text-anchor="middle"'
            f">{escape(x_label)}</text>"
        )
    return _frame(name, title, body)


def line_chart(
    name: str,
    title: str,
    xs: Sequence[int],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    x_label: str = "",
    y_label: str = "",
) -> str:
    """Lines over a log2 x axis with a 0–100 % y axis; one class per series (``s0``, ``s1``, …). The
    legend is a band above the plot (one line per series): it cannot hide a curve."""
    legend_h = 14 * len(series) + 4
    height = H + legend_h
    plot_top = TOP + legend_h
    plot_w, plot_h = W - LEFT - RIGHT, height - plot_top - BOTTOM
    low, high = math.log2(min(xs)), math.log2(max(xs))
    span = high - low or 1.0

    def px(x: float) -> float:
        return LEFT + plot_w * (math.log2(x) - low) / span

    def py(y: float) -> float:
        return height - BOTTOM - plot_h * y

    body = _y_axis(1.0, y_label, height=height, percent=True, plot_top=plot_top)
    for x in xs:
        body.append(
            f'<text class="tick" x="{px(x):.1f}" y="{height - BOTTOM + 14}" text-anchor="middle">{x}</text>'
        )
    for k, (label, ys) in enumerate(series):
        points = [(px(x), py(y)) for x, y in zip(xs, ys, strict=True) if y is not None]
        if not points:
            continue
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        body.append(f'<polyline class="line s{k}" points="{path}"/>')
        for (cx, cy), value in zip(points, [v for v in ys if v is not None], strict=True):
            body.append(
                f'<circle class="dot s{k}" cx="{cx:.1f}" cy="{cy:.1f}" r="3"><title>{escape(label)}: '
                f"{100 * value:.1f} %</title></circle>"
            )
        body.append(
            f'<text class="legend s{k}" x="{LEFT + 8}" y="{4 + 12 + 14 * k}">— {escape(label)}</text>'
        )
    if x_label:
        body.append(
            f'<text class="axis" x="{LEFT + plot_w / 2:.0f}" y="{height - 8}" text-anchor="middle"'
            f">{escape(x_label)}</text>"
        )
    return _frame(name, title, body, height=height)


def heatmap(
    name: str,
    title: str,
    counts: Sequence[Sequence[int]],
    x_edges: Sequence[float],
    y_labels: Sequence[str],
    *,
    x_label: str,
    y_label: str,
) -> str:
    """Rows × columns of counts as shaded cells (darker = more), with the count in each cell's title and a
    colour key (shade → count) in a strip right of the cells."""
    rows, cols = len(counts), len(counts[0]) if counts else 0
    plot_w, plot_h = W - LEFT - RIGHT - 20 - KEY_W, H - TOP - BOTTOM
    peak = max((max(r) for r in counts), default=0) or 1
    body = _colour_key(peak)
    cw, ch = plot_w / max(cols, 1), plot_h / max(rows, 1)
    for r in range(rows):
        y = H - BOTTOM - (r + 1) * ch
        body.append(
            f'<text class="tick" x="{LEFT + 14}" y="{y + ch / 2 + 4:.1f}" text-anchor="end"'
            f">{escape(y_labels[r])}</text>"
        )
        for c in range(cols):
            n = counts[r][c]
            shade = _shade(n, peak)
            body.append(
                f'<rect class="cell" x="{LEFT + 20 + c * cw:.1f}" y="{y:.1f}" width="{cw:.1f}"'
                f' height="{ch:.1f}" '
                f'fill-opacity="{shade:.3f}"><title>{escape(y_labels[r])},'
                f" {x_edges[c]:,.0f}–{x_edges[c + 1]:,.0f} "
                f"tokens: {n} tasks</title></rect>"
            )
    for c in range(0, cols + 1, max(1, cols // 5)):
        body.append(
            f'<text class="tick" x="{LEFT + 20 + c * cw:.1f}" y="{H - BOTTOM + 14}" text-anchor="middle">'
            f"{x_edges[c]:,.0f}</text>"
        )
    body.append(
        f'<text class="axis" x="{LEFT + 20 + plot_w / 2:.0f}" y="{H - 8}" text-anchor="middle"'
        f">{escape(x_label)}</text>"
    )
    body.append(f'<text class="axis" x="10" y="{TOP - 6}" text-anchor="start">{escape(y_label)}</text>')
    return _frame(name, title, body)


KEY_W = 64
"""Width of the heat map's colour key strip."""


def _shade(n: float, peak: int) -> float:
    return 0.0 if n <= 0 else 0.12 + 0.88 * math.log1p(n) / math.log1p(peak)


def _colour_key(peak: int) -> list[str]:
    """Swatches from 0 to ``peak`` tasks (log-spaced, as the cells are shaded), labelled with the count."""
    x = W - RIGHT - KEY_W + 10
    steps = sorted({0, 1, *(round(peak ** (k / 4)) for k in range(1, 5))})
    out = [
        '<g class="key-strip">',
        f'<text class="tick" x="{x}" y="{TOP + 8}" text-anchor="start">tasks</text>',
    ]
    for k, n in enumerate(steps):
        y = TOP + 16 + 18 * k
        out.append(
            f'<rect class="cell key" x="{x}" y="{y}" width="14" height="14" '
            f'fill-opacity="{_shade(n, peak):.3f}" stroke="#d9dee7"/>'
        )
        out.append(f'<text class="tick" x="{x + 20}" y="{y + 11}" text-anchor="start">{n:,}</text>')
    return [*out, "</g>"]


def _nice(value: float) -> float:
    if value <= 20:  # small counts: a multiple of 4, so the four grid steps are whole numbers
        return float(math.ceil(value / 4) * 4)
    exponent = 10.0 ** math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if value <= step * exponent:
            return step * exponent
    return 10 * exponent


def _fmt(value: float | None, percent: bool) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.0f} %" if percent else f"{value:,.0f}"


frame = _frame
"""The chart frame, public for the other pages drawn in the report's style (``gym eval compare``)."""
