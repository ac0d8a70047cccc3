"""`watch` and `summarize` in a terminal: the program's functions, then each child process."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ...records.watch import FunctionSummary, WatchReport
from ..formats import Layout
from ..lines import ranks as rank_lines
from ..lines.functions import (
    BREAKS_LEGEND,
    CHILD_HEADERS,
    CHILD_WIDTH,
    all_totals,
    breaks_differ,
    child_line,
    child_row,
    children,
    headers,
    label,
    line_notes,
    reason_lines,
    row,
    title,
    totals,
    with_failed,
)
from .console import console as new_console


def _lines_section(
    console: Console, functions: tuple[FunctionSummary, ...], indent: str, wrap: bool = False
) -> None:
    notes = [line for f in functions for line in line_notes(f)]
    if not notes:
        return
    console.print(
        Text(
            f"{indent.rstrip()}Graph breaks and specializations at their user lines".strip(),
            style="bold",
        )
    )
    for line in notes:
        console.print(f"{indent}{line}", soft_wrap=not wrap, markup=False)


def _reasons(
    console: Console, functions: tuple[FunctionSummary, ...], indent: str, wrap: bool = False
) -> None:
    for f in functions:
        if not f.reasons:
            continue
        for line in reason_lines(f):
            console.print(f"{indent}{line}", soft_wrap=not wrap, markup=False)


def _filled(
    table: Table,
    functions: Sequence[FunctionSummary],
    row_of: Callable[[FunctionSummary], list[str]],
) -> Table:
    """One row per function; recompiles and a hit recompile limit in red."""
    for f in functions:
        row = [Text(c) for c in row_of(f)]
        if f.recompiles:
            row[3].stylize("bold red")
        if f.recompile_limit_hit:
            row[-1].stylize("bold red")
        table.add_row(*row)
    return table


def _table(headers: tuple[str, ...]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i < 2 else "right", overflow="fold")
    return table


def functions(report: WatchReport, layout: Layout) -> str:
    buffer = io.StringIO()

    def make_console(w: int) -> Console:
        return new_console(buffer, layout, w)

    top = make_console(layout.width)
    top.print(Text(title(report), style="bold"))
    others = children(report)
    _body(top, report, others, make_console, layout.width)
    _rank_section(make_console(min(layout.width, CHILD_WIDTH)), report, wrap=layout.color)
    return buffer.getvalue()


def _rank_section(console: Console, report: WatchReport, wrap: bool = False) -> None:
    """``wrap``: fold long lines at the width (a terminal); else each stays one line (a log)."""
    heading = rank_lines.heading(report)
    if heading is None:
        return
    divs = report.rank_divergence or ()
    console.print(Text(heading, style="bold red" if divs else "bold"))
    if not divs:
        return
    table = _table(rank_lines.HEADERS)
    for d in divs:
        for cells_ in rank_lines.rows(d):
            table.add_row(*cells_)
    console.print(Padding(table, (0, 0, 0, 2), expand=False))
    for d in divs:
        for line in rank_lines.parting(d):
            console.print(f"  {line}", markup=False, soft_wrap=not wrap)
    for line in rank_lines.advice(report):
        console.print(line, markup=False, soft_wrap=not wrap)


def _body(
    console: Console,
    report: WatchReport,
    others: list,
    make_console: Callable[[int], Console],
    width: int,
) -> None:
    if not report.functions:
        console.print(
            "The program's own process compiled nothing."
            if others
            else "No torch.compile activity was recorded."
        )
    else:
        failed = with_failed(report.functions)
        console.print(
            _filled(_table(headers(report.functions)), report.functions, lambda f: row(f, failed))
        )
        if breaks_differ(report.functions):
            console.print(BREAKS_LEGEND, markup=False)
        if any(f.reasons for f in report.functions):
            console.print(
                Text("Recompile reasons (distinct, with how often each occurred)", style="bold")
            )
            _reasons(console, report.functions, "  ")
        _lines_section(console, report.functions, "  ")
        console.print(Text(totals(report), style="bold"))
    if not others:
        return
    narrow = make_console(min(width, CHILD_WIDTH))
    narrow.print(
        Text(f"Child processes ({len(others)}), each with its own compile ids", style="bold")
    )
    for p in others:
        if not p.functions:
            narrow.print(f"  {child_line(p)}", soft_wrap=True, markup=False)
            continue
        narrow.print(Text(f"  {label(p)}", style="bold"))
        table = _filled(_table(CHILD_HEADERS), p.functions, child_row)
        narrow.print(Padding(table, (0, 0, 0, 4), expand=False))
        _reasons(narrow, p.functions, "    ", wrap=True)
    narrow.print(Text(all_totals(report), style="bold"))
