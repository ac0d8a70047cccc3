"""`watch` and `summarize` as one HTML page: the functions with the most recompiles first, the
first ``TOP_FUNCTIONS`` in the open, the rest folded; each child process in a section of its
own. No torch."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...analysis.verdicts import plural
from ...records.watch import WatchReport
from .. import cells
from ..formats import Layout
from ..lines import functions as fn
from ..lines import ranks as rank_lines
from .page import env_section, esc, html_page, html_table, pre_block

TOP_FUNCTIONS = 20
#: more recompile reasons than this fold into a closed <details>


def _function_rows(functions: Iterable[Any], row_of: Any) -> list[str]:
    rows = []
    for f in functions:
        tds = []
        for i, value in enumerate(row_of(f)):
            cls = [] if i < 2 else ["n"]
            if (i == 3 and f.recompiles) or (i == len(row_of(f)) - 1 and f.recompile_limit_hit):
                cls.append("recompiles")
            attr = f' class="{" ".join(cls)}"' if cls else ""
            tds.append(f"<td{attr}>{esc(value)}</td>")
        rows.append(f'<tr class="function">{"".join(tds)}</tr>')
    return rows


def ranked(functions: Iterable[Any]) -> list[Any]:
    """Most recompiles first, then most compiles and failures; ties keep their order."""
    return sorted(functions, key=lambda f: (-f.recompiles, -f.failed, -f.compiles))


def _functions_section(
    functions: tuple, headers: tuple[str, ...], row_of: Any, top: int
) -> list[str]:
    order = ranked(functions)
    heads = [(h.replace("\n", " "), "") for h in headers]
    out = [html_table(heads, _function_rows(order[:top], row_of), "functions")]
    if len(order) > top:
        out.append(
            f'<details class="more"><summary>{len(order) - top} more functions '
            f"(fewer recompiles)</summary>"
            + html_table(heads, _function_rows(order[top:], row_of), "functions")
            + "</details>"
        )
    with_reasons = [f for f in order if f.reasons]
    if with_reasons:
        out.append("<h3>Recompile reasons (distinct, with how often each occurred)</h3>")
        for i, f in enumerate(with_reasons):
            lines = fn.reason_lines(f)
            kinds = "".join(
                f' <span class="kind">{esc(r.kind or "other")}</span>' for r in f.reasons
            )
            out.append(
                f'<details{" open" if i < top else ""} class="function-reasons">'
                f"<summary><code>{esc(lines[0])}</code> · "
                f"{esc(plural(f.recompiles, 'recompile'))}{kinds}</summary>"
                + pre_block(lines[1:])
                + "</details>"
            )
    notes = [fn.line_notes(f) for f in order]
    notes = [n for n in notes if n]
    if notes:
        out.append("<h3>Graph breaks and specializations at their user lines</h3>")
        out += [
            f"<details{' open' if i < top else ''}><summary><code>{esc(n[0])}</code>"
            f"</summary>{pre_block(line.strip() for line in n[1:])}</details>"
            for i, n in enumerate(notes)
        ]
    return out


def functions(report: WatchReport, layout: Layout, *, top: int = TOP_FUNCTIONS) -> str:
    """`watch` and `summarize`: functions with the most recompiles first, the first ``top`` in
    the open, the rest folded; each descendant process in a section of its own."""
    others = fn.children(report)
    body = [f"<h1>{esc(fn.title(report))}</h1>"]
    if not report.functions:
        body.append(
            '<p class="muted">'
            + esc(
                "The program's own process compiled nothing."
                if others
                else "No torch.compile activity was recorded."
            )
            + "</p>"
        )
    else:
        body.append(f'<p class="totals">{esc(fn.totals(report))}</p>')
        failed = fn.with_failed(report.functions)
        body += _functions_section(
            report.functions, fn.headers(report.functions), lambda f: fn.row(f, failed), top
        )
        if fn.breaks_differ(report.functions):
            body.append(f'<p class="muted">{esc(fn.BREAKS_LEGEND)}</p>')
    if others:
        body.append(f"<h2>Child processes ({len(others)}), each with its own compile ids</h2>")
        for i, p in enumerate(others):
            if not p.functions:
                body.append(f"<p>{esc(fn.child_line(p))}</p>")
                continue
            inner = "".join(_functions_section(p.functions, fn.CHILD_HEADERS, fn.child_row, top))
            body.append(
                f'<details{" open" if i < 3 else ""} class="process"><summary>'
                f"{esc(fn.label(p))}</summary>{inner}</details>"
            )
        body.append(f'<p class="totals">{esc(fn.all_totals(report))}</p>')
    body += _rank_section(report)
    body.append(
        env_section(
            report.tool,
            report.environment,
            [
                ("source", report.source),
                ("kind", report.kind),
                ("exit code", cells.num(report.exit_code)),
                ("interrupted", "yes" if report.interrupted else "no"),
            ],
        )
    )
    return html_page(fn.title(report), body)


def _rank_section(report: WatchReport) -> list[str]:
    heading = rank_lines.heading(report)
    if heading is None:
        return []
    divs = report.rank_divergence or ()
    out = [f'<h2 class="ranks{" recompiles" if divs else ""}">{esc(heading)}</h2>']
    if not divs:
        return out
    heads = [(h.replace("\n", " "), "") for h in rank_lines.HEADERS]
    rows = [
        "<tr>"
        + "".join(
            ("<td>" if i < 3 else '<td class="n">') + f"{esc(value)}</td>"
            for i, value in enumerate(row)
        )
        + "</tr>"
        for d in divs
        for row in rank_lines.rows(d)
    ]
    out.append(html_table(heads, rows, "ranks"))
    for d in divs:
        lines = rank_lines.parting(d)
        out.append(
            f'<details open class="rank-divergence"><summary><code>{esc(lines[0])}</code>'
            f"</summary>{pre_block(line.strip() for line in lines[1:])}</details>"
        )
    out += [f'<p class="muted">{esc(line.strip())}</p>' for line in rank_lines.advice(report)]
    return out
