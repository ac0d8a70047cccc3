"""`explain --format html`: per explained strategy its timeline, cache entries, guard diffs and
recompiles with their measured fixes (the lines `explain` prints), then the costs. No torch."""

from __future__ import annotations

from ...analysis.explain import Explained
from ...analysis.sequence import run_points, stepped
from .. import cells
from ..formats import Layout
from ..lines import explain as ex
from .page import NUMERIC, env_section, esc, html_page, html_table, pre_block
from .reports import diff_block
from .timeline import legend, timeline


def explain(explained: Explained, layout: Layout) -> str:
    report, explanations, notes = explained.report, explained.explanations, explained.notes
    body = [f"<h1>recompile-probe explain: {esc(report.scenario.name)}</h1>"]
    if not explanations:
        body.append(
            "<p>Nothing to explain: no chosen strategy compiled more than once or errored. "
            "Pick one with --strategy.</p>"
        )
    for x in explanations:
        title, _sep, points = ex.headline(x.run, 160).partition("\n")
        body.append(f'<section class="explanation"><h2>{esc(title)}</h2>')
        if points:
            body.append(f'<p class="mono">{esc(points.strip())}</p>')
        body.append(legend(stepped(x.run)) + timeline([x.run], run_points(x.run)))
        error = ex.error_lines(x)
        if error:
            body.append(f"<h3>{esc(error[0])}</h3>" + pre_block(error[1:]))
        entries = ex.entry_lines(x.run)
        if entries:
            body.append("<h3>Cache entries</h3>" + pre_block(entries))
        for d in x.diffs:
            body.append(
                f'<h3>Guard diff <span class="mono">{esc(d.function)} {esc(d.old)} → '
                f"{esc(d.new)}</span></h3>" + diff_block(d)
            )
        plain = cells.plain([x.run])
        for r in x.recompiles:
            lines = ex.recompile_lines(r, plain)
            body.append(
                f"<h3>{esc(lines[0].rsplit(': ', 1)[0])}: "
                f'<span class="kind">{esc(r.reason_kind or "other")}</span></h3>'
                + pre_block(lines[1:])
            )
        body.append("</section>")
    for name, _sizes in report.sequences():
        runs = [r for r in report.runs_for(name) if r.status != "unsupported"]
        if not runs or not any(x.run.sequence_name == name for x in explanations):
            continue
        rows = [
            "<tr>"
            + "".join(
                f"<td{'' if i == 0 else NUMERIC}>{esc(v)}</td>"
                for i, v in enumerate(ex.cost_row(run))
            )
            + "</tr>"
            for run in runs
        ]
        body.append(
            f"<h2>Runtime cost, sequence {esc(name)} (last point re-run)</h2>"
            + html_table(((h, "") for h in ex.COST_HEADERS), rows, "costs")
            + f'<p class="muted">{esc(ex.COST_LEGEND)}</p>'
        )
    body += [f'<p class="note"><b>Note:</b> {esc(n)}</p>' for n in notes]
    body.append(
        env_section(
            report.tool,
            report.environment,
            [
                ("scenario", report.scenario.name),
                ("scenario file", report.scenario.path or cells.NA),
            ],
        )
    )
    return html_page(f"recompile-probe explain: {report.scenario.name}", body)
