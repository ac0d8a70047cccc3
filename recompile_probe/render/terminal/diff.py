"""`diff` in a terminal: two report sets side by side (and the baseline part of `check`)."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ...analysis import baseline
from ..formats import Layout
from ..lines.diff import HEADERS, DiffView, Figure, Row, view
from .console import draw


def diff(comparison: baseline.Comparison, layout: Layout) -> str:
    return draw(layout, lambda console: _diff(console, comparison, layout.width))


def _diff(console: Console, comparison: baseline.Comparison, width: int) -> None:
    shown = view(list(comparison.pairs), comparison.tolerance, width)
    console.print(table(shown.rows))
    print_sequences(console, shown)
    console.print(shown.totals())


def print_sequences(console: Console, shown: DiffView) -> None:
    for line in shown.sequences:
        console.print(Text(line), soft_wrap=False, overflow="fold")


def table(rows: tuple[Row, ...]) -> Table:
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for header in HEADERS:
        t.add_column(header, no_wrap=header not in ("scenario",), overflow="fold")
    for r in rows:
        if r.side is not None:
            t.add_row(*r.key, Text(r.side, style="yellow"), *[""] * (len(HEADERS) - 4))
        else:
            t.add_row(*r.key, *(_cell(f) for f in r.figures))
    return t


def _cell(f: Figure) -> Text:
    if f.same:
        return Text(f.new)
    text = Text(f"{f.old} → {f.new}")
    if f.kind:
        text.stylize("bold red" if f.kind == "regression" else "green")
    return text
