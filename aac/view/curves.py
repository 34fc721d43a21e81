"""A training run's main curves as inline SVG (drawn here: the page loads nothing from anywhere)."""

from __future__ import annotations

import math
from html import escape
from typing import Optional

# (title, [(metrics.jsonl key, line label)]): what a reader checks first, behaviour beside the reward
CURVES = (
    ("return (mean per episode)", [("reward/episode_total_mean", "return")]),
    ("premature stops (% of episodes)", [("episode/premature_stop_pct", "premature")]),
    ("format errors (rate per turn)", [("parse_fail/reasoning_rate", "reasoning"), ("parse_fail/input_rate", "input"),
                                       ("parse_fail/reflect_rate", "reflect")]),
    # with the scripted critic (0/1 scores) the number of informative calls before a stop
    ("informative calls before a stop", [("episode/informativeness_at_stop_mean", "informative")]),
)
COLOURS = ("#2563eb", "#dc2626", "#16a34a", "#9333ea")
W, H, PAD_L, PAD_B, PAD_T, PAD_R = 300, 160, 44, 22, 34, 8


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def chart(title: str, series: list[tuple[str, list[tuple[int, float]]]]) -> str:
    """One line chart: x the step, one polyline per series; empty series are left out."""
    series = [(label, pts) for label, pts in series if pts]
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    parts = [f'<svg class="chart" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img" '
             f'aria-label="{escape(title)}"><text x="{PAD_L}" y="14" class="ct">{escape(title)}</text>']
    if not ys:
        parts.append(f'<text x="{PAD_L}" y="{H // 2}" class="ax">no data</text></svg>')
        return "".join(parts)
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if y0 == y1:
        y0, y1 = y0 - 1, y1 + 1
    def px(x: float) -> float:
        return PAD_L + (W - PAD_L - PAD_R) * ((x - x0) / (x1 - x0) if x1 > x0 else 0.5)

    def py(y: float) -> float:
        return H - PAD_B - (H - PAD_B - PAD_T) * (y - y0) / (y1 - y0)

    parts.append(f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{H - PAD_B}" class="axis"/>'
                 f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{H - PAD_B}" class="axis"/>'
                 f'<text x="{PAD_L - 3}" y="{PAD_T + 4}" class="ax" text-anchor="end">{_fmt(y1)}</text>'
                 f'<text x="{PAD_L - 3}" y="{H - PAD_B}" class="ax" text-anchor="end">{_fmt(y0)}</text>'
                 f'<text x="{PAD_L}" y="{H - 6}" class="ax">step {x0}</text>'
                 f'<text x="{W - PAD_R}" y="{H - 6}" class="ax" text-anchor="end">{x1}</text>')
    for k, (label, pts) in enumerate(series):
        colour = COLOURS[k % len(COLOURS)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.6"/>')
        parts += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2" fill="{colour}"/>' for x, y in pts[-200:]]
        if len(series) > 1:
            parts.append(f'<text x="{PAD_L + 4 + 62 * k}" y="27" class="ax" style="fill:{colour}">{escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _points(rows: list[dict], key: str) -> list[tuple[int, float]]:
    out = []
    for r in rows:
        v: Optional[float] = r.get(key)
        if isinstance(v, (int, float)) and math.isfinite(v):
            out.append((int(r["step"]), float(v)))
    return out


def curves(rows: list[dict]) -> str:
    """The main curves of a run's metrics.jsonl rows, one chart each ("" with no rows)."""
    if not rows:
        return ""
    return "".join(chart(title, [(label, _points(rows, key)) for key, label in keys]) for title, keys in CURVES)
