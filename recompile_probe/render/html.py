"""One self-contained HTML page: inline CSS and SVG, no network, no script.

A CI artefact people open in a browser: the comparison table, a timeline of every strategy's calls
drawn as SVG, the recompile reasons with their kinds, guard diffs, the verdict and the
environment. Every figure and sentence comes from the same helpers the terminal table uses
(``cells``, ``analysis``, ``explain``): this module lays them out, it computes nothing. Every piece
of text from a report is escaped (function names, reasons and paths come from user code). No
torch: a saved report renders without it.
"""

from __future__ import annotations

from html import escape
from typing import Any, Iterable

from .. import analysis
from ..explain import GuardDiff, diffs, noise_note, slow_winner
from ..model import Call, Environment, Report, Run, Tool, WatchReport
from ..sizes import Point
from . import cells

#: a watch report shows this many functions (most recompiles first) before folding the rest
TOP_FUNCTIONS = 20
#: more recompile reasons than this fold into a closed <details>
OPEN_REASONS = 20

# Timeline geometry, in CSS pixels. Labels are monospace so their width is known without a
# browser: MONO_CHAR is 11px monospace's advance, generous for every common monospace face.
MARK = 18  #: one call's slot
ROW = 22  #: one strategy's row
AXIS_ROW = 16  #: one size symbol's row under the marks
MONO_CHAR = 7.0
NAME_CHAR = 7.6  #: 12px monospace, for strategy names
PAD = 6
NUMERIC = ' class="n"'

#: shape (SVG) and colour per mark; shapes differ so the marks read without colour too
MARK_TITLES = {"compile": "compile", "recompile": "recompile",
               "failed": "failed compile (no graph)", "hit": "cache hit",
               "eager": "ran eagerly", "error": "error"}

CSS = """
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--alt:#f6f8fa;--win:#1a7f37;--bad:#cf222e;
--warn:#9a6700;--compile:#0969da;--recompile:#cf222e;--failed:#bf8700;--hit:#1a7f37;
--eager:#bf8700;--error:#8250df}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:var(--fg);background:#fff;margin:0 auto;padding:16px 20px 40px;max-width:1500px}
h1{font-size:21px;margin:4px 0 2px}h2{font-size:17px;margin:28px 0 8px;padding-bottom:3px;
border-bottom:1px solid var(--line)}h3{font-size:14px;margin:18px 0 6px}
.meta,.muted{color:var(--muted)}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;
font-size:12px}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0}
table{border-collapse:collapse;margin:6px 0}
th,td{padding:3px 9px;border-bottom:1px solid var(--line);vertical-align:top;text-align:left}
th{background:var(--alt);font-weight:600;white-space:nowrap}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.winner td{font-weight:700;color:var(--win)}tr.unsupported td{color:var(--muted)}
table.reasons td.mono{white-space:nowrap}
td.recompiles,td.bad,.bad{color:var(--bad);font-weight:600}
td.warn{color:var(--warn);font-weight:600}
.scroll{overflow-x:auto;max-width:100%}
.kind{display:inline-block;padding:0 7px;border-radius:9px;background:#ddf4ff;color:#0550ae;
font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:nowrap}
.verdict{margin:12px 0;padding:8px 12px;border-left:4px solid var(--win);background:#f0fff4}
.note{margin:8px 0;padding:6px 12px;border-left:4px solid var(--warn);background:#fff8c5}
.totals{margin:8px 0;padding:6px 12px;border-left:4px solid var(--line);background:var(--alt);
font-weight:600}
.alert{margin:8px 0;padding:6px 12px;border-left:4px solid var(--bad);background:#ffebe9}
details{margin:6px 0}summary{cursor:pointer;font-weight:600}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;align-items:center;margin:4px 0}
.legend span{display:inline-flex;align-items:center;gap:4px}
svg.timeline text{font:11px ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;
fill:var(--fg)}
svg.timeline text.name{font-size:12px}svg.timeline text.axis{fill:var(--muted)}
svg .band{fill:var(--alt)}svg .rule{stroke:var(--line)}
dl.env{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:6px 0}
dl.env dt{color:var(--muted)}dl.env dd{margin:0}
ul{margin:4px 0;padding-left:22px}
"""


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _page(title: str, body: Iterable[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")


def _pre(lines: Iterable[str], cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<pre{attr}>" + _e("\n".join(lines)) + "</pre>"


def _table(headers: Iterable[tuple[str, str]], rows: Iterable[str], cls: str = "") -> str:
    """``headers``: (text, tooltip); ``rows``: ready <tr> elements."""
    head = "".join(f'<th title="{_e(tip)}">{_e(h)}</th>' if tip else f"<th>{_e(h)}</th>"
                   for h, tip in headers)
    attr = f' class="{cls}"' if cls else ""
    return (f'<div class="scroll"><table{attr}><thead><tr>{head}</tr></thead><tbody>'
            + "".join(rows) + "</tbody></table></div>")


def _environment(tool: Tool, env: Environment, extra: Iterable[tuple[str, Any]] = ()) -> str:
    items = [("recompile-probe", tool.version), ("torch", env.torch or cells.NA),
             ("python", env.python), ("platform", env.platform), *extra]
    return ("<h2>Environment</h2><dl class=\"env\">"
            + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items) + "</dl>")


# --- the timeline ---------------------------------------------------------------------------------

def mark_kind(call: Call) -> str:
    """compile | recompile | failed | hit | eager | error, as cells.glyph tells them apart."""
    return "failed" if cells.glyph(call) == cells.FAILED_GLYPH else call.event


def _shape(kind: str, x: float, y: float) -> str:
    if kind == "compile":
        return f'<circle cx="{x:.1f}" cy="{y}" r="5.5" fill="var(--compile)"/>'
    if kind in ("recompile", "failed"):
        pts = f"{x:.1f},{y - 5.5} {x + 5.5:.1f},{y + 4.5} {x - 5.5:.1f},{y + 4.5}"
        if kind == "failed":
            return (f'<polygon points="{pts}" fill="#fff" stroke="var(--failed)" '
                    'stroke-width="1.6"/>')
        return f'<polygon points="{pts}" fill="var(--recompile)"/>'
    if kind == "hit":
        return f'<circle cx="{x:.1f}" cy="{y}" r="2.8" fill="var(--hit)"/>'
    if kind == "eager":
        return (f'<circle cx="{x:.1f}" cy="{y}" r="4.3" fill="#fff" stroke="var(--eager)" '
                'stroke-width="1.6"/>')
    if kind == "error":
        return (f'<path d="M{x - 4.5:.1f} {y - 4.5}l9 9m0 -9l-9 9" stroke="var(--error)" '
                'stroke-width="2.2"/>')
    return f'<rect x="{x - 3:.1f}" y="{y - 3}" width="6" height="6" fill="var(--muted)"/>'


def legend(stepped: bool = False) -> str:
    items = "".join(
        f'<span><svg width="14" height="14" aria-hidden="true">{_shape(kind, 7, 7)}</svg>'
        f"{_e(text)}</span>" for kind, text in MARK_TITLES.items())
    note = f'<p class="muted">{_e(cells.GROUPED)}</p>' if stepped else ""
    return f'<div class="legend">{items}</div>{note}'


def _call_title(run: Run, call: Call, events: dict[int, list]) -> str:
    parts = [run.strategy, f"call {call.index}", analysis.at_call(run, call.index),
             MARK_TITLES.get(mark_kind(call), call.event)]
    for e in events.get(call.index, ()):
        what = f"{e.compile_id or '?'}" + (" failed" if e.failed else "")
        if e.reason_kind:
            what += f" {e.reason_kind}"
        parts.append(what)
    if call.graphs is not None and call.event in ("compile", "recompile"):
        parts.append(analysis.plural(call.graphs, "graph"))
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
    pitches = [max(n * MARK + 4, max(len(h) for h in head) * MONO_CHAR + 8, MARK + 4)
               for n, head in zip(slots, heads)]
    left = PAD + max([len(r.strategy) for r in shown] + [len(s) for s in symbols]) * NAME_CHAR + 10
    xs = [left]
    for p in pitches:
        xs.append(xs[-1] + p)
    marks_h = len(shown) * ROW
    width = int(xs[-1] + PAD)
    height = int(PAD + marks_h + 6 + len(symbols) * AXIS_ROW + PAD)
    out = [f'<svg class="timeline" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="timeline: one mark per call, a row per strategy">']
    for k in range(0, len(points), 2):  # bands tell the columns apart
        out.append(f'<rect class="band" x="{xs[k]:.1f}" y="{PAD - 2}" width="{pitches[k]:.1f}" '
                   f'height="{marks_h + 4 + len(symbols) * AXIS_ROW}"/>')
    for i, run in enumerate(shown):
        y = PAD + i * ROW + ROW / 2
        events: dict[int, list] = {}
        for e in run.compile_events:
            if e.call_index is not None:
                events.setdefault(e.call_index, []).append(e)
        out.append(f'<g class="run" data-strategy="{_e(run.strategy)}" '
                   f'data-calls="{len(run.calls)}">')
        out.append(f'<text class="name" x="{left - 8:.1f}" y="{y + 4}" '
                   f'text-anchor="end">{_e(run.strategy)}</text>')
        for k, group in enumerate(groups[id(run)]):
            start = xs[k] + (pitches[k] - len(group) * MARK) / 2
            for j, call in enumerate(group):
                x = start + (j + 0.5) * MARK
                kind = mark_kind(call)
                out.append(f'<g class="mark {kind}" data-event="{_e(call.event)}" '
                           f'data-call="{call.index}"><title>'
                           f"{_e(_call_title(run, call, events))}</title>"
                           f"{_shape(kind, x, y)}</g>")
        out.append("</g>")
    base = PAD + marks_h + 2
    out.append(f'<line class="rule" x1="{left - 4:.1f}" x2="{xs[-1]:.1f}" y1="{base}" '
               f'y2="{base}"/>')
    for j, symbol in enumerate(symbols):
        y = base + (j + 1) * AXIS_ROW - 3
        out.append(f'<g class="axis" data-symbol="{_e(symbol)}">'
                   f'<text class="name" x="{left - 8:.1f}" y="{y}" text-anchor="end" '
                   f'font-weight="600">{_e(symbol)}</text>')
        out += [f'<text class="axis" x="{xs[k] + pitches[k] / 2:.1f}" y="{y}" '
                f'text-anchor="middle">{_e(head[j])}</text>' for k, head in enumerate(heads)]
        out.append("</g>")
    out.append("</svg>")
    return '<div class="scroll">' + "".join(out) + "</div>"


# --- the run report -------------------------------------------------------------------------------

def _summary(runs: list[Run], winner: Run | None) -> str:
    columns = cells.columns(runs)
    with_failed = cells.FAILED_COLUMN in columns
    recompiles = columns.index(cells.COLUMNS[2])
    rows = []
    for run in runs:
        values = cells.row(run, with_failed)
        if run is winner:
            values[0] = f"★ {values[0]}"
        tds = []
        for i, value in enumerate(values):
            cls = [] if i == 0 or columns[i][0] in ("outputs", "status") else ["n"]
            if i == recompiles and run.recompiles:
                cls.append("recompiles")
            if with_failed and i == 2 and run.failed_compiles:
                cls.append("warn")
            if columns[i][0] == "outputs" and run.outputs_match is False:
                cls.append("bad")
            if columns[i][0] == "status" and run.status == "error":
                cls.append("bad")
            attr = f' class="{" ".join(cls)}"' if cls else ""
            tds.append(f"<td{attr}>{_e(value)}</td>")
        cls = "winner" if run is winner else ("unsupported" if run.status == "unsupported" else "")
        title = f' title="{_e(run.strategy_description)}"' if run.strategy_description else ""
        rows.append(f'<tr class="{cls}" data-strategy="{_e(run.strategy)}"{title}>'
                    + "".join(tds) + "</tr>")
    return _table(((cells.header(h), tip) for h, tip in columns), rows, "summary")


def _reason_cell(run: Run, compile_id: str | None, reason: str | None) -> str:
    from .table import _with_origins  # the terminal's lines: a guard, then the line behind it

    return _pre(_with_origins(run, compile_id, reason).splitlines())


def _change(run: Run, t: analysis.Transition, plain: bool) -> str:
    if plain:
        return f"{'?' if t.batch_before is None else t.batch_before} → {t.batch_after}"
    return analysis.moved(run, t)


def _reasons(runs: list[Run]) -> str:
    found = [(run, t) for run in runs for t in analysis.transitions(run)]
    if not found:
        return ""
    plain = cells.plain(runs)
    rows = [f"<tr><td>{_e(t.strategy)}</td><td class=\"n\">{t.call_index}</td>"
            f"<td class=\"mono\">{_e(_change(run, t, plain))}</td>"
            f"<td class=\"mono\">{_e(t.compile_id or cells.NA)}</td>"
            f"<td><span class=\"kind\">{_e(t.kind or 'other')}</span></td>"
            f"<td>{_reason_cell(run, t.compile_id, t.reason)}</td></tr>" for run, t in found]
    table = _table([("strategy", ""), ("call", ""), ("B" if plain else "change", ""),
                    ("id", "compile id, frame/attempt as tlparse shows it"),
                    ("kind", "the first failing guard's kind"), ("reason", "")], rows, "reasons")
    title = f"Recompile reasons ({len(found)})"
    if len(found) > OPEN_REASONS:
        return f"<details class=\"reasons\"><summary>{_e(title)}</summary>{table}</details>"
    return f"<h3>{_e(title)}</h3>{table}"


def _diff_block(d: GuardDiff) -> str:
    from .explanation import _diff_lines  # the same lines `explain` prints

    return _pre(_diff_lines(d)[1:], "diff")


def _diffs(runs: list[Run]) -> str:
    parts = []
    for run in runs:
        found = diffs(run)
        if not found:
            continue
        inner = "".join(f"<h3 class=\"mono\">{_e(d.function)} {_e(d.old)} → {_e(d.new)}</h3>"
                        + _diff_block(d) for d in found)
        parts.append(f"<details class=\"diffs\"><summary>{_e(run.strategy)}: "
                     f"{_e(analysis.plural(len(found), 'guard diff'))} between cache entries"
                     f"</summary>{inner}</details>")
    return "<h3>Guard diffs</h3>" + "".join(parts) if parts else ""


def _violations(runs: list[Run]) -> str:
    found = [(run, v) for run in runs for v in run.violations]
    if not found:
        return ""
    from ..budgets import MAX_KEYS

    rows = [f"<tr><td>{_e(run.strategy)}</td><td class=\"bad mono\">{_e(v.budget)}</td>"
            f"<td class=\"n\">{_e(f'≤ {v.limit}' if v.budget in MAX_KEYS else v.limit)}</td>"
            f"<td class=\"n\">{_e(cells.NA if v.actual is None else v.actual)}</td>"
            f"<td class=\"mono\">{_e(v.source or '')}</td>"
            f"<td>{_pre(v.reasons or ([run.error.message] if run.error else []))}</td></tr>"
            for run, v in found]
    return "<h3 class=\"bad\">Budgets broken</h3>" + _table(
        [("strategy", ""), ("budget", ""), ("limit", ""), ("actual", ""), ("set at", ""),
         ("why", "")], rows, "violations")


def _sequence(name: str, runs: list[Run], anchor: str) -> str:
    winner = analysis.best(runs)
    points = analysis.points_of(runs)
    eager = next((r.eager_us for r in runs if r.eager_us is not None), None)
    out = [f'<section class="sequence" id="{_e(anchor)}">',
           f"<h2>Sequence {_e(name)}: <span class=\"mono\">"
           f"{_e(analysis.sequence_label(points, 160))}</span></h2>"]
    if eager is not None:
        out.append(f'<p class="meta">eager {eager:.1f} µs/call</p>')
    out.append(_summary(runs, winner))
    out.append(f"<h3>Timeline</h3>{legend(any(map(analysis.stepped, runs)))}"
               + timeline(runs, points))
    out.append(_reasons(runs))
    out.append(_diffs(runs))
    out.append(_violations(runs))
    failed = [line for line in (cells.error_line(r) for r in runs) if line]
    if failed:
        out.append("<h3>Not run or failed</h3><ul>" + "".join(
            f'<li class="bad">{_e(line)}</li>' for line in failed) + "</ul>")
    notes = cells.run_notes(runs)
    if notes:
        out.append("<h3>Notes</h3><ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
    out.append(f'<p class="verdict"><b>Verdict:</b> {_e(analysis.verdict(name, runs))}</p>')
    for note in (slow_winner(runs), noise_note(runs)):
        if note:
            out.append(f'<p class="note"><b>Note:</b> {_e(note)}</p>')
    out.append("</section>")
    return "\n".join(part for part in out if part)


def _report(report: Report, index: int) -> list[str]:
    first = report.runs[0] if report.runs else None
    targets = list(dict.fromkeys(r.target for r in report.runs)) or [cells.NA]
    backends = list(dict.fromkeys(r.backend for r in report.runs)) or [cells.NA]
    out = [f'<header><h1>recompile-probe: {_e(report.scenario.name)}</h1>'
           f'<p class="meta">target <code>{_e(first.target if first else cells.NA)}</code> · '
           f"backend <code>{_e(first.backend if first else cells.NA)}</code> · torch "
           f"{_e(report.environment.torch or cells.NA)} · recompile-probe "
           f"{_e(report.tool.version)}</p></header>"]
    if not report.complete:
        out.append('<p class="alert">Interrupted: only the runs that finished are shown.</p>')
    if not report.runs:
        out.append('<p class="muted">No runs.</p>')
    for k, (name, _) in enumerate(report.sequences()):
        out.append(_sequence(name, report.runs_for(name), f"r{index}-s{k}"))
    out.append(_environment(report.tool, report.environment, [
        ("scenario", report.scenario.name), ("scenario file", report.scenario.path or cells.NA),
        ("target", ", ".join(targets)), ("backend", ", ".join(backends)),
        ("complete", "yes" if report.complete else "no (interrupted)"),
        ("schema_version", report.schema_version)]))
    return out


def render_reports(reports: list[Report], title: str | None = None,
                   head: Iterable[str] = ()) -> str:
    """Several reports (a `check` bundle) on one page, each with its own sections."""
    body = list(head)
    for i, report in enumerate(reports):
        if len(reports) > 1:
            body.append(f'<article class="report" id="report-{i}">')
        body += _report(report, i)
        if len(reports) > 1:
            body.append("</article>")
    name = title or ("recompile-probe: " + ", ".join(r.scenario.name for r in reports))
    return _page(name, body)


def render(report: Report, **_: object) -> str:
    """The `html` format of `run` and `render`."""
    return render_reports([report])


# --- check ----------------------------------------------------------------------------------------

def outcome(result: Any) -> str:
    """`check --html`: the summary line, every violation and the scenarios that could not run,
    then each report in full."""
    from .outcome import summary

    ok = int(result.exit_code) == 0
    head = [f"<h1>recompile-probe check: {'passed' if ok else 'failed'}</h1>",
            f'<p class="{"verdict" if ok else "alert"}">{_e(summary(result))}</p>']
    head += [f'<p class="alert">{_e(scenario.path or scenario.name)}: could not run: '
             f"{_e(error.message)}</p>" for scenario, error in result.failures]
    head += [f'<p class="note">no baseline for scenario {_e(repr(name))}: nothing compared</p>'
             for name in result.without_baseline]
    if result.changes:
        import io

        from rich.console import Console

        from . import comparison

        buffer = io.StringIO()  # the terminal's comparison, as text: one way to read a change
        Console(file=buffer, width=200, no_color=True, color_system=None).print(
            comparison.table(result.pairs, result.tolerance, only_changed=True))
        head.append("<h2>Changes against the baseline</h2>" + _pre(buffer.getvalue().rstrip()
                                                                   .splitlines()))
    return render_reports(list(result.reports), "recompile-probe check", head)


# --- watch and summarize --------------------------------------------------------------------------

def _function_rows(functions: Iterable[Any], row_of: Any) -> list[str]:
    rows = []
    for f in functions:
        tds = []
        for i, value in enumerate(row_of(f)):
            cls = [] if i < 2 else ["n"]
            if (i == 3 and f.recompiles) or (i == len(row_of(f)) - 1 and f.recompile_limit_hit):
                cls.append("recompiles")
            attr = f' class="{" ".join(cls)}"' if cls else ""
            tds.append(f"<td{attr}>{_e(value)}</td>")
        rows.append(f'<tr class="function">{"".join(tds)}</tr>')
    return rows


def ranked(functions: Iterable[Any]) -> list[Any]:
    """Most recompiles first, then most compiles and failures; ties keep their order."""
    return sorted(functions, key=lambda f: (-f.recompiles, -f.failed, -f.compiles))


def _functions_section(functions: tuple, headers: tuple[str, ...], row_of: Any,
                       top: int) -> list[str]:
    from .functions import line_notes, reason_lines

    order = ranked(functions)
    heads = [(h.replace("\n", " "), "") for h in headers]
    out = [_table(heads, _function_rows(order[:top], row_of), "functions")]
    if len(order) > top:
        out.append(f"<details class=\"more\"><summary>{len(order) - top} more functions "
                   f"(fewer recompiles)</summary>"
                   + _table(heads, _function_rows(order[top:], row_of), "functions")
                   + "</details>")
    with_reasons = [f for f in order if f.reasons]
    if with_reasons:
        out.append("<h3>Recompile reasons (distinct, with how often each occurred)</h3>")
        for i, f in enumerate(with_reasons):
            lines = reason_lines(f)
            kinds = "".join(f' <span class="kind">{_e(r.kind or "other")}</span>'
                            for r in f.reasons)
            out.append(f"<details{' open' if i < top else ''} class=\"function-reasons\">"
                       f"<summary><code>{_e(lines[0])}</code> · "
                       f"{_e(analysis.plural(f.recompiles, 'recompile'))}{kinds}</summary>"
                       + _pre(lines[1:]) + "</details>")
    notes = [line_notes(f) for f in order]
    notes = [n for n in notes if n]
    if notes:
        out.append("<h3>Graph breaks and specializations at their user lines</h3>")
        out += [f"<details{' open' if i < top else ''}><summary><code>{_e(n[0])}</code>"
                f"</summary>{_pre(line.strip() for line in n[1:])}</details>"
                for i, n in enumerate(notes)]
    return out


def functions(report: WatchReport, *, top: int = TOP_FUNCTIONS, **_: object) -> str:
    """`watch` and `summarize`: functions with the most recompiles first, the first ``top`` in
    the open, the rest folded; each descendant process in a section of its own."""
    from . import functions as fn

    others = fn.children(report)
    body = [f"<h1>{_e(fn._title(report))}</h1>"]
    if not report.functions:
        body.append('<p class="muted">' + _e("The program's own process compiled nothing."
                                              if others else
                                              "No torch.compile activity was recorded.") + "</p>")
    else:
        body.append(f'<p class="totals">{_e(fn.totals(report))}</p>')
        body += _functions_section(report.functions, fn.HEADERS, fn._row, top)
    if others:
        body.append(f"<h2>Child processes ({len(others)}), each with its own compile ids</h2>")
        for i, p in enumerate(others):
            if not p.functions:
                body.append(f"<p>{_e(fn.child_line(p))}</p>")
                continue
            inner = "".join(_functions_section(p.functions, fn.CHILD_HEADERS, fn._child_row,
                                               top))
            body.append(f"<details{' open' if i < 3 else ''} class=\"process\"><summary>"
                        f"{_e(fn.label(p))}</summary>{inner}</details>")
        body.append(f'<p class="totals">{_e(fn.all_totals(report))}</p>')
    body.append(_environment(report.tool, report.environment, [
        ("source", report.source), ("kind", report.kind),
        ("exit code", cells.num(report.exit_code)),
        ("interrupted", "yes" if report.interrupted else "no")]))
    return _page(fn._title(report), body)


# --- explain --------------------------------------------------------------------------------------

def explanation(report: Report, explanations: list, notes: list[str], **_: object) -> str:
    """`explain --format html`: per explained strategy its timeline, cache entries, guard diffs
    and recompiles with their measured fixes (the lines `explain` prints), then the costs."""
    from . import explanation as ex

    body = [f"<h1>recompile-probe explain: {_e(report.scenario.name)}</h1>"]
    if not explanations:
        body.append("<p>Nothing to explain: no chosen strategy compiled more than once. "
                    "Pick one with --strategy.</p>")
    for x in explanations:
        title, _, points = ex._headline(x.run, 160).partition("\n")
        body.append(f"<section class=\"explanation\"><h2>{_e(title)}</h2>")
        if points:
            body.append(f'<p class="mono">{_e(points.strip())}</p>')
        body.append(legend(analysis.stepped(x.run))
                    + timeline([x.run], analysis.run_points(x.run)))
        entries = ex._entry_lines(x.run)
        if entries:
            body.append("<h3>Cache entries</h3>" + _pre(entries))
        for d in x.diffs:
            body.append(f"<h3>Guard diff <span class=\"mono\">{_e(d.function)} {_e(d.old)} → "
                        f"{_e(d.new)}</span></h3>" + _diff_block(d))
        plain = cells.plain([x.run])
        for r in x.recompiles:
            lines = ex._recompile_lines(r, plain)
            body.append(f"<h3>{_e(lines[0].rsplit(': ', 1)[0])}: "
                        f"<span class=\"kind\">{_e(r.reason_kind or 'other')}</span></h3>"
                        + _pre(lines[1:]))
        body.append("</section>")
    for name, _ in report.sequences():
        runs = [r for r in report.runs_for(name) if r.status != "unsupported"]
        if not runs or not any(x.run.sequence_name == name for x in explanations):
            continue
        rows = ["<tr>" + "".join(f"<td{'' if i == 0 else NUMERIC}>{_e(v)}</td>"
                                 for i, v in enumerate(ex._cost_row(run))) + "</tr>"
                for run in runs]
        body.append(f"<h2>Runtime cost, sequence {_e(name)} (last call repeated)</h2>"
                    + _table(((h, "") for h in ex.COST_HEADERS), rows, "costs")
                    + f'<p class="muted">{_e(ex.COST_LEGEND)}</p>')
    body += [f'<p class="note"><b>Note:</b> {_e(n)}</p>' for n in notes]
    body.append(_environment(report.tool, report.environment, [
        ("scenario", report.scenario.name), ("scenario file", report.scenario.path or cells.NA)]))
    return _page(f"recompile-probe explain: {report.scenario.name}", body)
