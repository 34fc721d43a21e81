"""One self-contained HTML page of a run's (or two runs') episodes: the data inline as JSON, the curves
inline as SVG, style and script inline (aac/view/template.py). Nothing is fetched: it opens from file://."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from aac.view.curves import curves
from aac.view.load import Side, load
from aac.view.template import SCRIPT, STYLE

MAX_TEXT = 2000  # characters of one text field on the page (the files keep it whole): bounds the page's size


def _cut(value: object) -> object:
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return value[:MAX_TEXT] + f"… [{len(value) - MAX_TEXT} more characters in the run's files]"
    if isinstance(value, dict):
        return {k: _cut(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(v) for v in value]
    return value


def _side_json(side: Side) -> dict:
    return {"kind": side.kind, "name": side.name, "path": side.path, "score_range": side.score_range,
            "episodes": _cut(side.episodes)}


def _filters(sides: list[Side]) -> str:
    def select(key: str, label: str, options: tuple[str, ...]) -> str:
        opts = "".join(f'<option value="{o}">{o}</option>' for o in options)
        return f'<label>{label} <select id="f-{key}">{opts}</select></label>'

    lo, hi = sides[0].score_range
    yes_no = ("any", "yes", "no")
    return ('<form id="filters" onsubmit="return false">'
            + select("concluded", "concluded", yes_no) + select("premature", "premature stop", yes_no)
            + select("format", "format error", yes_no) + select("timed_out", "timed out", yes_no)
            + f'<label>score <input id="f-score" type="text" placeholder="{lo:g}-{hi:g}" '
            f'title="LO-HI: {"final critic score, 0-1" if sides[0].kind == "train" else "judge score, 1-5"}"></label>'
            + select("phase", "phase", ("all", "reasoning", "input", "reflect"))
            + '<span id="shown" class="muted"></span></form>')


def _summaries(sides: list[Side]) -> str:
    out = [f"<h2>{escape(s.name)}: training curves</h2><div class=\"charts\">{curves(s.metrics)}</div>"
           for s in sides if s.metrics]
    reported = [s for s in sides if s.summary]
    if reported:  # one table, a column per side
        keys = list(dict.fromkeys(k for s in reported for k in s.summary))
        head = "".join(f"<th>{escape(s.name)}</th>" for s in reported)
        body = "".join(f"<tr><td>{escape(k)}</td>" + "".join(
            f"<td>{'–' if s.summary.get(k) is None else format(s.summary[k], '.3g')}</td>" for s in reported) + "</tr>"
            for k in keys)
        out.append(f'<h2>report</h2><table class="summary"><tr><th></th>{head}</tr>{body}</table>')
    return f'<section id="curves">{"".join(out)}</section>' if out else ""


def render(sides: list[Side]) -> str:
    """The page of one side, or of two side by side (the same functions under both)."""
    functions = {uid: f for side in reversed(sides) for uid, f in side.functions.items()}
    data = {"sides": [_side_json(s) for s in sides], "functions": _cut(functions)}
    # `</` inside a script element would end it
    blob = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    title = " vs ".join(s.name for s in sides)
    paths = " · ".join(f"{s.kind}: {escape(s.path)}" for s in sides)
    what = ("the same functions under both, side by side" if len(sides) > 1 else
            "kept episodes of each training step" if sides[0].kind == "train" else "one episode per function")
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>aac episodes: {escape(title)}</title>'
            f'<style>{STYLE}</style></head><body><header><h1>aac episodes: {escape(title)}</h1>'
            f'<p>{paths} · {what}</p></header>{_summaries(sides)}{_filters(sides)}'
            f'<div id="main"><nav id="index"></nav><section id="episode"></section></div>'
            f'<script type="application/json" id="data">{blob}</script><script>{SCRIPT}</script></body></html>')


def write_page(dirs: list[str | Path], out: str | Path) -> Path:
    """Write the page of one or two run/eval dirs to `out`; its path."""
    out, sides = Path(out), [load(d) for d in dirs]  # a dir that is no run: its error before any folder is made
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(sides), encoding="utf-8")
    return out
