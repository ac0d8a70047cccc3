"""`watch` and `summarize` in a terminal: the program's functions, then each child process, then
the rank section; everything shown comes from lines/functions.py's view."""

from __future__ import annotations

import io
from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ...records.watch import WatchReport
from ..formats import Layout
from ..lines.functions import BREAKS_LEGEND, CHILD_HEADERS, CHILD_WIDTH, FunctionView, view
from ..lines.ranks import HEADERS as RANK_HEADERS
from ..lines.ranks import RanksView
from .console import console


def functions(report: WatchReport, layout: Layout) -> str:
    shown = view(report)
    buffer = io.StringIO()
    wide = console(buffer, layout)
    narrow = console(buffer, layout, min(layout.width, CHILD_WIDTH))
    wide.print(Text(shown.title, style="bold"))
    if not shown.functions:
        wide.print(shown.nothing)
    else:
        wide.print(_table(shown.headers, shown.functions))
        if shown.breaks_differ:
            wide.print(BREAKS_LEGEND, markup=False)
        if any(f.reasons for f in shown.functions):
            wide.print(
                Text("Recompile reasons (distinct, with how often each occurred)", style="bold")
            )
            _lines(wide, [line for f in shown.functions for line in f.reasons], "  ")
        notes = [line for f in shown.functions for line in f.notes]
        if notes:
            wide.print(Text("Graph breaks and specializations at their user lines", style="bold"))
            _lines(wide, notes, "  ")
        wide.print(Text(shown.totals, style="bold"))
    if shown.children:
        narrow.print(
            Text(
                f"Child processes ({len(shown.children)}), each with its own compile ids",
                style="bold",
            )
        )
        for p in shown.children:
            if not p.functions:
                narrow.print(f"  {p.line}", soft_wrap=True, markup=False)
                continue
            narrow.print(Text(f"  {p.label}", style="bold"))
            narrow.print(Padding(_table(CHILD_HEADERS, p.functions), (0, 0, 0, 4), expand=False))
            _lines(narrow, [line for f in p.functions for line in f.reasons], "    ", wrap=True)
        narrow.print(Text(shown.all_totals, style="bold"))
    if shown.ranks is not None:
        _ranks(narrow, shown.ranks, wrap=layout.color)
    return buffer.getvalue()


def _ranks(console: Console, ranks: RanksView, wrap: bool) -> None:
    """``wrap``: fold long lines at the width (a terminal); else each stays one line (a log)."""
    console.print(Text(ranks.heading, style="bold red" if ranks.divergent else "bold"))
    if not ranks.divergent:
        return
    table = _bare(RANK_HEADERS)
    for cells in ranks.rows:
        table.add_row(*cells)
    console.print(Padding(table, (0, 0, 0, 2), expand=False))
    _lines(console, [line for lines in ranks.partings for line in lines], "  ", wrap)
    _lines(console, list(ranks.advice), "", wrap)


def _lines(console: Console, lines: Sequence[str], indent: str, wrap: bool = False) -> None:
    for line in lines:
        console.print(f"{indent}{line}", soft_wrap=not wrap, markup=False)


def _table(headers: tuple[str, ...], functions: Sequence[FunctionView]) -> Table:
    """One row per function; recompiles and a hit recompile limit in red."""
    table = _bare(headers)
    for f in functions:
        row = [Text(c) for c in f.cells]
        if f.recompiles:
            row[3].stylize("bold red")
        if f.limit_hit:
            row[-1].stylize("bold red")
        table.add_row(*row)
    return table


def _bare(headers: tuple[str, ...]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i < 2 else "right", overflow="fold")
    return table
