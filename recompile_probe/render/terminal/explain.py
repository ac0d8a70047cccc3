"""`explain` in a terminal: the shared lines (lines/explain.py), then a cost table per sequence."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ...analysis.explain import Explained
from ..formats import Layout
from ..lines.explain import COST_HEADERS, COST_LEGEND, blocks, cost_row, headline
from .console import draw


def explain(explained: Explained, layout: Layout) -> str:
    return draw(layout, lambda console: _explain(console, explained, layout))


def _explain(console: Console, explained: Explained, layout: Layout) -> None:
    report, explanations, notes = explained.report, explained.explanations, explained.notes
    width, verbose = layout.width, layout.verbose
    if not explanations:
        console.print(
            "Nothing to explain: no chosen strategy compiled more than once or errored. "
            "Pick one with --strategy."
        )
    for x in explanations:
        console.print(Text("\n" + headline(x.run, width), style="bold"))
        for block in blocks(x, verbose):
            console.print(Text("\n".join(block)), soft_wrap=False, overflow="fold")
    for name, _ in report.sequences():
        runs = [r for r in report.runs_for(name) if r.status != "unsupported"]
        if not runs or not any(x.run.sequence_name == name for x in explanations):
            continue
        table = Table(
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            show_edge=False,
            collapse_padding=True,
            title=f"Runtime cost, sequence {name} (last point re-run)",
            title_justify="left",
        )
        for i, header in enumerate(COST_HEADERS):
            table.add_column(header, justify="left" if i == 0 else "right")
        for run in runs:
            table.add_row(*cost_row(run))
        console.print(table)
        console.print(Text(COST_LEGEND, style="dim"))
    for note in notes:
        console.print(Text(f"Note: {note}", style="bold yellow"))
