"""The timeline as SVG: a row per strategy, a column per point, one mark per call; the points'
sizes on an axis per symbol under the marks. Shapes differ, so the marks read without colour."""

from __future__ import annotations

from ...analysis.sequence import at_call
from ...analysis.verdicts import plural
from ...records.run import Call, Run
from ...sizes.points import Point
from .. import cells
from .page import esc

# Timeline geometry, in CSS pixels. Labels are monospace so their width is known without a
# browser: MONO_CHAR is 11px monospace's advance, generous for every common monospace face.
MARK = 18  #: one call's slot
ROW = 22  #: one strategy's row
AXIS_ROW = 16  #: one size symbol's row under the marks
MONO_CHAR = 7.0
NAME_CHAR = 7.6  #: 12px monospace, for strategy names
PAD = 6

#: shape (SVG) and colour per mark; shapes differ so the marks read without colour too
MARK_TITLES = {
    "compile": "compile",
    "recompile": "recompile",
    "failed": "failed compile (no graph)",
    "hit": "cache hit",
    "eager": "ran eagerly",
    "error": "error",
}


def mark_kind(call: Call) -> str:
    """compile | recompile | failed | hit | eager | error, as cells.glyph tells them apart."""
    return "failed" if cells.glyph(call) == cells.FAILED_GLYPH else call.event


def _shape(kind: str, x: float, y: float) -> str:
    if kind == "compile":
        return f'<circle cx="{x:.1f}" cy="{y}" r="5.5" fill="var(--compile)"/>'
    if kind in ("recompile", "failed"):
        pts = f"{x:.1f},{y - 5.5} {x + 5.5:.1f},{y + 4.5} {x - 5.5:.1f},{y + 4.5}"
        if kind == "failed":
            return (
                f'<polygon points="{pts}" fill="#fff" stroke="var(--failed)" stroke-width="1.6"/>'
            )
        return f'<polygon points="{pts}" fill="var(--recompile)"/>'
    if kind == "hit":
        return f'<circle cx="{x:.1f}" cy="{y}" r="2.8" fill="var(--hit)"/>'
    if kind == "eager":
        return (
            f'<circle cx="{x:.1f}" cy="{y}" r="4.3" fill="#fff" stroke="var(--eager)" '
            'stroke-width="1.6"/>'
        )
    if kind == "error":
        return (
            f'<path d="M{x - 4.5:.1f} {y - 4.5}l9 9m0 -9l-9 9" stroke="var(--error)" '
            'stroke-width="2.2"/>'
        )
    return f'<rect x="{x - 3:.1f}" y="{y - 3}" width="6" height="6" fill="var(--muted)"/>'


def legend(stepped: bool = False) -> str:
    items = "".join(
        f'<span><svg width="14" height="14" aria-hidden="true">{_shape(kind, 7, 7)}</svg>'
        f"{esc(text)}</span>"
        for kind, text in MARK_TITLES.items()
    )
    note = f'<p class="muted">{esc(cells.GROUPED)}</p>' if stepped else ""
    return f'<div class="legend">{items}</div>{note}'


def _call_title(run: Run, call: Call, events: dict[int, list]) -> str:
    parts = [
        run.strategy,
        f"call {call.index}",
        at_call(run, call.index),
        MARK_TITLES.get(mark_kind(call), call.event),
    ]
    for e in events.get(call.index, ()):
        what = f"{e.compile_id or '?'}" + (" failed" if e.failed else "")
        if e.reason_kind:
            what += f" {e.reason_kind}"
        parts.append(what)
    if call.graphs is not None and call.event in ("compile", "recompile"):
        parts.append(plural(call.graphs, "graph"))
    if call.outputs_match is False:
        parts.append("output differs from eager")
    return " · ".join(parts)


def timeline(runs: list[Run], points: list[Point]) -> str:
    """An SVG with a row per strategy and a column per point: one mark per call (a driver's
    calls in one point side by side), the points' sizes on an axis per symbol under the marks."""
    shown = [r for r in runs if r.status != "unsupported" or r.calls]
    if not shown or not points:
        return '<p class="muted">No calls.</p>'
    groups = {id(r): cells.by_point(r, len(points)) for r in shown}
    symbols = list(dict.fromkeys(s for p in points for s in p.symbols))
    heads = [[str(p.get(s)) if p.get(s) is not None else "" for s in symbols] for p in points]
    slots = [max([len(groups[id(r)][k]) for r in shown] + [1]) for k in range(len(points))]
    pitches = [
        max(n * MARK + 4, max(len(h) for h in head) * MONO_CHAR + 8, MARK + 4)
        for n, head in zip(slots, heads)
    ]
    left = PAD + max([len(r.strategy) for r in shown] + [len(s) for s in symbols]) * NAME_CHAR + 10
    xs = [left]
    for p in pitches:
        xs.append(xs[-1] + p)
    marks_h = len(shown) * ROW
    width = int(xs[-1] + PAD)
    height = int(PAD + marks_h + 6 + len(symbols) * AXIS_ROW + PAD)
    out = [
        f'<svg class="timeline" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="timeline: one mark per call, a row per strategy">'
    ]
    for k in range(0, len(points), 2):  # bands tell the columns apart
        out.append(
            f'<rect class="band" x="{xs[k]:.1f}" y="{PAD - 2}" width="{pitches[k]:.1f}" '
            f'height="{marks_h + 4 + len(symbols) * AXIS_ROW}"/>'
        )
    for i, run in enumerate(shown):
        y = PAD + i * ROW + ROW / 2
        events: dict[int, list] = {}
        for e in run.compile_events:
            if e.call_index is not None:
                events.setdefault(e.call_index, []).append(e)
        out.append(
            f'<g class="run" data-strategy="{esc(run.strategy)}" data-calls="{len(run.calls)}">'
        )
        out.append(
            f'<text class="name" x="{left - 8:.1f}" y="{y + 4}" '
            f'text-anchor="end">{esc(run.strategy)}</text>'
        )
        for k, group in enumerate(groups[id(run)]):
            start = xs[k] + (pitches[k] - len(group) * MARK) / 2
            for j, call in enumerate(group):
                x = start + (j + 0.5) * MARK
                kind = mark_kind(call)
                out.append(
                    f'<g class="mark {kind}" data-event="{esc(call.event)}" '
                    f'data-call="{call.index}"><title>'
                    f"{esc(_call_title(run, call, events))}</title>"
                    f"{_shape(kind, x, y)}</g>"
                )
        out.append("</g>")
    base = PAD + marks_h + 2
    out.append(
        f'<line class="rule" x1="{left - 4:.1f}" x2="{xs[-1]:.1f}" y1="{base}" y2="{base}"/>'
    )
    for j, symbol in enumerate(symbols):
        y = base + (j + 1) * AXIS_ROW - 3
        out.append(
            f'<g class="axis" data-symbol="{esc(symbol)}">'
            f'<text class="name" x="{left - 8:.1f}" y="{y}" text-anchor="end" '
            f'font-weight="600">{esc(symbol)}</text>'
        )
        out += [
            f'<text class="axis" x="{xs[k] + pitches[k] / 2:.1f}" y="{y}" '
            f'text-anchor="middle">{esc(head[j])}</text>'
            for k, head in enumerate(heads)
        ]
        out.append("</g>")
    out.append("</svg>")
    return '<div class="scroll">' + "".join(out) + "</div>"
