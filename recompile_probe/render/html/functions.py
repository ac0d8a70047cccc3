"""`watch` and `summarize` as one HTML page: the functions with the most recompiles first, the
first ``TOP_FUNCTIONS`` in the open, the rest folded; each child process in a section of its
own. No torch."""

from __future__ import annotations

from collections.abc import Iterable

from ...records.watch import WatchReport
from .. import cells
from ..formats import Layout
from ..lines import functions as fn
from ..lines import ranks as rank_lines
from ..lines.ranks import RanksView
from .page import env_section, esc, html_page, html_table, pre_block

TOP_FUNCTIONS = 20
#: more recompile reasons than this fold into a closed <details>


def _function_rows(functions: Iterable[fn.FunctionView]) -> list[str]:
    rows = []
    for f in functions:
        tds = []
        for i, value in enumerate(f.cells):
            cls = [] if i < 2 else ["n"]
            if (i == 3 and f.recompiles) or (i == len(f.cells) - 1 and f.limit_hit):
                cls.append("recompiles")
            attr = f' class="{" ".join(cls)}"' if cls else ""
            tds.append(f"<td{attr}>{esc(value)}</td>")
        rows.append(f'<tr class="function">{"".join(tds)}</tr>')
    return rows


def ranked(functions: Iterable[fn.FunctionView]) -> list[fn.FunctionView]:
    """Most recompiles first, then most compiles and failures; ties keep their order."""
    return sorted(functions, key=lambda f: (-f.recompiles, -f.failed, -f.compiles))


def _functions_section(
    functions: tuple[fn.FunctionView, ...], headers: tuple[str, ...], top: int
) -> list[str]:
    order = ranked(functions)
    heads = [(h.replace("\n", " "), "") for h in headers]
    out = [html_table(heads, _function_rows(order[:top]), "functions")]
    if len(order) > top:
        out.append(
            f'<details class="more"><summary>{len(order) - top} more functions '
            f"(fewer recompiles)</summary>"
            + html_table(heads, _function_rows(order[top:]), "functions")
            + "</details>"
        )
    with_reasons = [f for f in order if f.reasons]
    if with_reasons:
        out.append("<h3>Recompile reasons (distinct, with how often each occurred)</h3>")
        for i, f in enumerate(with_reasons):
            kinds = "".join(f' <span class="kind">{esc(k)}</span>' for k in f.kinds)
            out.append(
                f'<details{" open" if i < top else ""} class="function-reasons">'
                f"<summary><code>{esc(f.reasons[0])}</code> · "
                f"{esc(f.recompiles_text)}{kinds}</summary>"
                + pre_block(f.reasons[1:])
                + "</details>"
            )
    notes = [f.notes for f in order if f.notes]
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
    shown = fn.view(report)
    body = [f"<h1>{esc(shown.title)}</h1>"]
    if not shown.functions:
        body.append(f'<p class="muted">{esc(shown.nothing)}</p>')
    else:
        body.append(f'<p class="totals">{esc(shown.totals)}</p>')
        body += _functions_section(shown.functions, shown.headers, top)
        if shown.breaks_differ:
            body.append(f'<p class="muted">{esc(fn.BREAKS_LEGEND)}</p>')
    if shown.children:
        body.append(
            f"<h2>Child processes ({len(shown.children)}), each with its own compile ids</h2>"
        )
        for i, p in enumerate(shown.children):
            if not p.functions:
                body.append(f"<p>{esc(p.line)}</p>")
                continue
            inner = "".join(_functions_section(p.functions, fn.CHILD_HEADERS, top))
            body.append(
                f'<details{" open" if i < 3 else ""} class="process"><summary>'
                f"{esc(p.label)}</summary>{inner}</details>"
            )
        body.append(f'<p class="totals">{esc(shown.all_totals)}</p>')
    if shown.ranks is not None:
        body += _rank_section(shown.ranks)
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
    return html_page(shown.title, body)


def _rank_section(ranks: RanksView) -> list[str]:
    out = [f'<h2 class="ranks{" recompiles" if ranks.divergent else ""}">{esc(ranks.heading)}</h2>']
    if not ranks.divergent:
        return out
    heads = [(h.replace("\n", " "), "") for h in rank_lines.HEADERS]
    rows = [
        "<tr>"
        + "".join(
            ("<td>" if i < 3 else '<td class="n">') + f"{esc(value)}</td>"
            for i, value in enumerate(row)
        )
        + "</tr>"
        for row in ranks.rows
    ]
    out.append(html_table(heads, rows, "ranks"))
    for lines in ranks.partings:
        out.append(
            f'<details open class="rank-divergence"><summary><code>{esc(lines[0])}</code>'
            f"</summary>{pre_block(line.strip() for line in lines[1:])}</details>"
        )
    out += [f'<p class="muted">{esc(line.strip())}</p>' for line in ranks.advice]
    return out
