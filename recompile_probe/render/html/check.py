"""`check --html`: the summary line, every violation, the scenarios that could not run and the
changes against the baseline, then each report in full. No torch."""

from __future__ import annotations

from ...analysis.check import Outcome
from ..formats import Layout
from ..lines.check import sampled, summary
from ..lines.diff import HEADERS, Figure, view
from .page import esc, html_table, pre_block
from .reports import page


def check(result: Outcome, layout: Layout) -> str:
    ok = int(result.exit_code) == 0
    head = [
        f"<h1>recompile-probe check: {'passed' if ok else 'failed'}</h1>",
        f'<p class="{"verdict" if ok else "alert"}">{esc(summary(result))}</p>',
    ]
    head += [
        f'<p class="alert">{esc(scenario.path or scenario.name)}: could not run: '
        f"{esc(error.message)}</p>"
        for scenario, error in result.failures
    ]
    head += [
        f'<p class="note">no baseline for scenario {esc(repr(name))}: nothing compared</p>'
        for name in result.without_baseline
    ]
    head += [f'<p class="note">{esc(line)}</p>' for line in sampled(result)]
    if result.changes:
        head.append("<h2>Changes against the baseline</h2>" + _changes(result, layout.width))
    return page(list(result.reports), "recompile-probe check", head)


def _changes(result: Outcome, width: int) -> str:
    shown = view(list(result.pairs), result.tolerance, width, only_changed=True)
    rows = []
    for r in shown.rows:
        key = "".join(f"<td>{esc(k)}</td>" for k in r.key)
        if r.side is not None:
            rest = f'<td class="warn" colspan="{len(HEADERS) - 3}">{esc(r.side)}</td>'
        else:
            rest = "".join(_cell(f) for f in r.figures)
        rows.append(f"<tr>{key}{rest}</tr>")
    sequences = pre_block(shown.sequences) if shown.sequences else ""
    return html_table(((h, "") for h in HEADERS), rows, "changes") + sequences


def _cell(f: Figure) -> str:
    if f.same:
        return f'<td class="n">{esc(f.new)}</td>'
    kind = {"regression": " bad", "improvement": " good"}.get(f.kind or "", "")
    return f'<td class="n{kind}">{esc(f.old)} → {esc(f.new)}</td>'
