"""The two charts of the compare page, as inline SVG in the analysis report's style (pure strings).

- :func:`band_matrix_svg`: 7 × 7 cells, row = band in A, column = band in B, shaded by task count (log
  scale), the count written in each non-empty cell, the diagonal (same band) outlined;
- :func:`scatter_svg`: per distinct ``(passes, n)`` of A and B, one point at (rate A, rate B) with both
  Jeffreys intervals as error bars, its area growing with the number of tasks, coloured by transition;
  the diagonal is "no change". At most :data:`MAX_POINTS` points (the most populated).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

import numpy as np

from rewardgym.analysis.svg import frame
from rewardgym.compare.stats import combos

MAX_POINTS = 1500
_SIZE, _PAD, _LEFT = 420, 24, 60


def band_matrix_svg(name: str, counts: Sequence[Sequence[int]], labels: Sequence[str]) -> str:
    cell = 48
    left, top = 92, 24
    width, height = left + 7 * cell + 16, top + 7 * cell + 70
    peak = max((max(row) for row in counts), default=0) or 1
    body = []
    for r in range(7):
        y = top + r * cell
        body.append(
            f'<text class="tick" x="{left - 6}" y="{y + cell / 2 + 4:.0f}" text-anchor="end">'
            f"{escape(labels[r])}</text>"
        )
        for c in range(7):
            n = counts[r][c]
            x = left + c * cell
            shade = 0.0 if n == 0 else 0.12 + 0.78 * math.log1p(n) / math.log1p(peak)
            cls = "cell diag" if r == c else "cell"
            body.append(
                f'<rect class="{cls}" data-row="{r}" data-col="{c}" x="{x}" y="{y}" width="{cell}" '
                f'height="{cell}" fill-opacity="{shade:.3f}"><title>{escape(labels[r])} → '
                f"{escape(labels[c])}: {n:,} tasks</title></rect>"
            )
            if n:
                light = " light" if shade > 0.55 else ""
                body.append(
                    f'<text class="value{light}" x="{x + cell / 2}" y="{y + cell / 2 + 4}" '
                    f'text-anchor="middle">{n:,}</text>'
                )
    for c in range(7):
        x = left + c * cell + cell // 2
        body.append(
            f'<text class="tick" x="{x}" y="{top + 7 * cell + 14}" text-anchor="end" '
            f'transform="rotate(-35 {x} {top + 7 * cell + 14})">{escape(labels[c])}</text>'
        )
    body.append(
        f'<text class="axis" x="{left + 3.5 * cell}" y="{height - 6}" text-anchor="middle">band in B</text>'
    )
    body.append(f'<text class="axis" x="4" y="{top - 8}">band in A ↓</text>')
    return frame(name, "Band-to-band transition matrix (tasks)", body, width, height)


def scatter_svg(
    name: str,
    a: dict[str, np.ndarray],
    b: dict[str, np.ndarray],
    code: np.ndarray,
    transition_names: Sequence[str],
    level: float = 0.95,
) -> str:
    plot = _SIZE - _LEFT - _PAD
    width, height = _SIZE, _SIZE

    def px(v: float) -> float:
        return _LEFT + plot * v

    def py(v: float) -> float:
        return _PAD + plot * (1 - v)

    unique, inverse = combos(a["passes"], a["n"], b["passes"], b["n"])
    counts = np.bincount(inverse, minlength=unique.shape[0])
    first = np.full(unique.shape[0], inverse.shape[0], np.int64)
    np.minimum.at(first, inverse, np.arange(inverse.shape[0]))
    chosen = np.argsort(-counts, kind="stable")[:MAX_POINTS]
    peak = int(counts.max()) if counts.size else 1
    body = []
    for k in range(5):
        v = k / 4
        body.append(f'<line class="grid" x1="{px(0)}" x2="{px(1)}" y1="{py(v):.1f}" y2="{py(v):.1f}"/>')
        body.append(f'<line class="grid" x1="{px(v):.1f}" x2="{px(v):.1f}" y1="{py(0)}" y2="{py(1)}"/>')
        body.append(
            f'<text class="tick" x="{_LEFT - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{100 * v:.0f} %</text>'
        )
        body.append(
            f'<text class="tick" x="{px(v):.1f}" y="{py(0) + 14}" text-anchor="middle">{100 * v:.0f} %</text>'
        )
    body.append(f'<line class="diagonal" x1="{px(0)}" y1="{py(0)}" x2="{px(1)}" y2="{py(1)}"/>')
    for i in chosen.tolist():
        t = int(first[i])
        ra, rb = float(a["rate"][t]), float(b["rate"][t])
        kind = transition_names[int(code[t])]
        radius = 2.5 + 7.5 * math.sqrt(int(counts[i]) / peak)
        sa, na, sb, nb = (int(v) for v in unique[i])
        a_low, a_high = px(float(a["low"][t])), px(float(a["high"][t]))
        b_low, b_high = py(float(b["low"][t])), py(float(b["high"][t]))
        body.append(
            f'<g class="pt t-{kind}"><line x1="{a_low:.1f}" x2="{a_high:.1f}"'
            f' y1="{py(rb):.1f}" y2="{py(rb):.1f}"/><line x1="{px(ra):.1f}" x2="{px(ra):.1f}" '
            f'y1="{b_low:.1f}" y2="{b_high:.1f}"/><circle cx="{px(ra):.1f}" '
            f'cy="{py(rb):.1f}" r="{radius:.1f}"><title>A {sa}/{na}, B {sb}/{nb}: {int(counts[i]):,} tasks '
            f"({kind.replace('_', ' ')})</title></circle></g>"
        )
    body.append(
        f'<text class="axis" x="{px(0.5)}" y="{height - 4}" text-anchor="middle">pass rate in A</text>'
    )
    body.append(
        f'<text class="axis" x="12" y="{py(0.5)}" transform="rotate(-90 12 {py(0.5)})" text-anchor="middle"'
        ">pass rate in B</text>"
    )
    title = f"Per-task pass rate, A vs B, with {100 * level:g} % intervals"
    return frame(name, title, body, width, height)
