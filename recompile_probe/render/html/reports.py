"""A run report (or a check bundle) as one HTML page: the comparison table, a timeline per
sequence, the recompile reasons with their kinds, guard diffs, the verdict and the environment.
Every figure and sentence comes from the helpers the terminal uses (cells.py, lines/): this lays
them out, it computes nothing. No torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ...analysis.diffs import GuardDiff
from ...records.report import Report
from ...records.run import Run
from .. import cells
from ..formats import Layout
from ..lines import coverage
from ..lines.explain import diff_lines
from ..lines.reports import RanksLines, SequenceLines, of_report
from .page import env_section, esc, html_page, html_table, pre_block
from .timeline import legend, timeline

#: more recompile reasons than this fold into a closed <details>
OPEN_REASONS = 20


def _summary(runs: list[Run], winner: Run | None) -> str:
    columns = cells.columns(runs)
    with_failed = cells.FAILED_COLUMN in columns
    recompiles = columns.index(cells.COLUMNS[2])
    rows = []
    for run in runs:
        values = cells.row(run, with_failed, cells.COVERS_COLUMN in columns)
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
            tds.append(f"<td{attr}>{esc(value)}</td>")
        row_cls = (
            "winner" if run is winner else ("unsupported" if run.status == "unsupported" else "")
        )
        title = f' title="{esc(run.strategy_description)}"' if run.strategy_description else ""
        rows.append(
            f'<tr class="{row_cls}" data-strategy="{esc(run.strategy)}"{title}>'
            + "".join(tds)
            + "</tr>"
        )
    return html_table(((cells.header(h), tip) for h, tip in columns), rows, "summary")


def _reason_cell(run: Run, compile_id: str | None, reason: str | None) -> str:
    return pre_block(cells.reason_with_origins(run, compile_id, reason).splitlines())


def _reasons(seq: SequenceLines) -> str:
    if not seq.recompiles:
        return ""
    rows = [
        f'<tr><td>{esc(t.strategy)}</td><td class="n">{t.call_index}</td>'
        f'<td class="mono">{esc(t.change)}</td>'
        f'<td class="mono">{esc(t.compile_id or cells.NA)}</td>'
        f'<td><span class="kind">{esc(t.kind)}</span></td>'
        f"<td>{_reason_cell(t.run, t.compile_id, t.reason)}</td></tr>"
        for t in seq.recompiles
    ]
    table = html_table(
        [
            ("strategy", ""),
            ("call", ""),
            ("B" if seq.plain else "change", ""),
            ("id", "compile id, frame/attempt as tlparse shows it"),
            ("kind", "the first failing guard's kind"),
            ("reason", ""),
        ],
        rows,
        "reasons",
    )
    title = f"Recompile reasons ({len(seq.recompiles)})"
    if len(seq.recompiles) > OPEN_REASONS:
        return f'<details class="reasons"><summary>{esc(title)}</summary>{table}</details>'
    return f"<h3>{esc(title)}</h3>{table}"


def diff_block(d: GuardDiff) -> str:
    return pre_block(diff_lines(d)[1:], "diff")


def _diffs(seq: SequenceLines) -> str:
    parts = []
    for found in seq.guard_diffs:
        inner = "".join(
            f'<h3 class="mono">{esc(d.function)} {esc(d.old)} → {esc(d.new)}</h3>' + diff_block(d)
            for d in found.diffs
        )
        parts.append(
            f'<details class="diffs"><summary>{esc(found.run.strategy)}: '
            f"{esc(found.title)} between cache entries"
            f"</summary>{inner}</details>"
        )
    return "<h3>Guard diffs</h3>" + "".join(parts) if parts else ""


def _violations(runs: list[Run]) -> str:
    found = [(run, v) for run in runs for v in run.violations]
    if not found:
        return ""
    rows = [
        f'<tr><td>{esc(run.strategy)}</td><td class="bad mono">{esc(v.budget)}</td>'
        f'<td class="n">{esc(cells.limit(v))}</td>'
        f'<td class="n">{esc(cells.NA if v.actual is None else v.actual)}</td>'
        f'<td class="mono">{esc(v.source or "")}</td>'
        f"<td>{pre_block(v.reasons or ([run.error.message] if run.error else []))}</td></tr>"
        for run, v in found
    ]
    return '<h3 class="bad">Budgets broken</h3>' + html_table(
        [
            ("strategy", ""),
            ("budget", ""),
            ("limit", ""),
            ("actual", ""),
            ("set at", ""),
            ("why", ""),
        ],
        rows,
        "violations",
    )


def _ranks(ranks: RanksLines) -> str:
    """Each strategy's ranks side by side, and the line that says which makes them agree."""
    world = [str(r) for r in range(ranks.world_size)]
    headers = [("strategy", ""), *((f"rank {r}", "") for r in world), ("ranks agree", "")]
    rows = []
    for row in ranks.rows:
        agree = {True: "yes", False: "no", None: "n/a"}[row.agree]
        if row.agree is False and row.differs:
            agree += f" ({', '.join(row.differs)})"
        cells_ = "".join(f"<td>{esc(c)}</td>" for c in row.cells)
        rows.append(f"<tr><td>{esc(row.strategy)}</td>{cells_}<td>{esc(agree)}</td></tr>")
    return (
        f'<section class="sequence"><h2>Ranks: {esc(ranks.sequence)}</h2>'
        + html_table(headers, rows)
        + f'<p class="verdict"><b>Ranks verdict:</b> {esc(ranks.verdict)}'
        "</p></section>"
    )


def _sequence(seq: SequenceLines, anchor: str) -> str:
    runs = list(seq.runs)
    eager = cells.eager_label(runs)
    out = [
        f'<section class="sequence" id="{esc(anchor)}">',
        f'<h2>Sequence {esc(seq.title)}: <span class="mono">{esc(seq.label(160))}</span></h2>',
    ]
    if eager is not None:
        out.append(f'<p class="meta">{esc(eager)}</p>')
    out.append(_summary(runs, seq.winner))
    out.append(f"<h3>Timeline</h3>{legend(seq.stepped)}" + timeline(runs, list(seq.points)))
    out.append(_reasons(seq))
    out.append(_diffs(seq))
    out.append(_violations(runs))
    failed = [line for line in (cells.error_line(r) for r in runs) if line]
    if failed:
        out.append(
            "<h3>Not run or failed</h3><ul>"
            + "".join(f'<li class="bad">{esc(line)}</li>' for line in failed)
            + "</ul>"
        )
    covered = coverage.section(runs, shown=None)
    if covered:
        out.append("<h3>Coverage</h3>" + pre_block("\n".join(covered)))
    notes = cells.run_notes(runs)
    if notes:
        out.append("<h3>Notes</h3><ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
    out.append(f'<p class="verdict"><b>Verdict:</b> {esc(seq.verdict)}</p>')
    out += [f'<p class="note"><b>Note:</b> {esc(note)}</p>' for note in seq.notes]
    out.append("</section>")
    return "\n".join(part for part in out if part)


def _report(report: Report, index: int) -> list[str]:
    first = report.runs[0] if report.runs else None
    targets = list(dict.fromkeys(r.target for r in report.runs)) or [cells.NA]
    backends = list(dict.fromkeys(r.backend for r in report.runs)) or [cells.NA]
    out = [
        f"<header><h1>recompile-probe: {esc(report.scenario.name)}</h1>"
        f'<p class="meta">target <code>{esc(first.target if first else cells.NA)}</code> · '
        f"backend <code>{esc(first.backend if first else cells.NA)}</code> · torch "
        f"{esc(report.environment.torch or cells.NA)} · recompile-probe "
        f"{esc(report.tool.version)}</p></header>"
    ]
    if not report.complete:
        out.append('<p class="alert">Interrupted: only the runs that finished are shown.</p>')
    if not report.runs:
        out.append('<p class="muted">No runs.</p>')
    names = [name for name, _ in report.sequences()]
    for part in of_report(report):
        if isinstance(part, RanksLines):
            out.append(_ranks(part))
            continue
        anchor = f"r{index}-s{names.index(part.name)}"
        out.append(_sequence(part, anchor if part.rank is None else f"{anchor}-rank{part.rank}"))
    out.append(
        env_section(
            report.tool,
            report.environment,
            [
                ("scenario", report.scenario.name),
                ("scenario file", report.scenario.path or cells.NA),
                ("target", ", ".join(targets)),
                ("backend", ", ".join(backends)),
                ("complete", "yes" if report.complete else "no (interrupted)"),
                ("schema_version", report.schema_version),
            ],
        )
    )
    return out


def reports(value: Sequence[Report], layout: Layout) -> str:
    """`run` and `render`: each report with its own sections, on one page."""
    return page(list(value))


def page(reports: list[Report], title: str | None = None, head: Iterable[str] = ()) -> str:
    body = list(head)
    for i, report in enumerate(reports):
        if len(reports) > 1:
            body.append(f'<article class="report" id="report-{i}">')
        body += _report(report, i)
        if len(reports) > 1:
            body.append("</article>")
    name = title or ("recompile-probe: " + ", ".join(r.scenario.name for r in reports))
    return html_page(name, body)
