"""Per-function tables for `watch` and `summarize`."""

from __future__ import annotations

import io
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..analysis import plural
from ..model import FunctionSummary, WatchReport
from . import cells

HEADERS = ("function", "where", "compiles", "recompiles", "graphs", "graph\nbreaks",
           "cache\nentries", "guards", "shape\nguards", "limit\nhit")


def _where(f: FunctionSummary) -> str:
    return f"{Path(f.filename).name if f.filename else '?'}:{cells.num(f.line)}"


def _row(f: FunctionSummary) -> list[str]:
    return [f.function, _where(f), str(f.compiles), str(f.recompiles), cells.num(f.graphs),
            cells.num(f.graph_breaks), cells.num(f.cache_entries), cells.num(f.guard_count),
            cells.num(f.shape_env_guard_count), "YES" if f.recompile_limit_hit else "no"]


def _title(report: WatchReport) -> str:
    if report.kind == "summarize":
        return f"recompile-probe summarize · {report.source}"
    status = "interrupted" if report.interrupted else f"exit {report.exit_code}"
    return f"recompile-probe watch · {report.source} · {status}"


def totals(report: WatchReport) -> str:
    fs = report.functions
    line = (f"{plural(len(fs), 'compiled function')}: "
            f"{plural(sum(f.compiles for f in fs), 'compile')}, "
            f"{plural(sum(f.recompiles for f in fs), 'recompile')}")
    if any(f.recompile_limit_hit for f in fs):
        line += "; recompile limit hit"
    if report.skipped_lines:
        line += f"; {report.skipped_lines} unreadable trace lines skipped"
    return line + "."


def render(report: WatchReport, *, color: bool = False, width: int = 120) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, no_color=not color,
                      highlight=False, color_system="auto" if color else None)
    console.print(Text(_title(report), style="bold"))
    if not report.functions:
        console.print("No torch.compile activity was recorded.")
        return buffer.getvalue()
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for i, header in enumerate(HEADERS):
        table.add_column(header, justify="left" if i < 2 else "right", overflow="fold")
    for f in report.functions:
        row = [Text(c) for c in _row(f)]
        if f.recompiles:
            row[3].stylize("bold red")
        if f.recompile_limit_hit:
            row[-1].stylize("bold red")
        table.add_row(*row)
    console.print(table)
    with_reasons = [f for f in report.functions if f.reasons]
    if with_reasons:
        console.print(Text("Recompile reasons (distinct, with how often each occurred)",
                           style="bold"))
        for f in with_reasons:
            console.print(f"  {f.function} ({_where(f)})", soft_wrap=True)
            for r in f.reasons:
                console.print(f"    {r.count}× [{r.kind or 'other'}] {r.text}", soft_wrap=True,
                              markup=False)
    console.print(Text(totals(report), style="bold"))
    return buffer.getvalue()


def markdown(report: WatchReport) -> str:
    out = [f"## {_title(report)}", ""]
    headers = [h.replace("\n", " ") for h in HEADERS]
    out += ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in _row(f)) + " |"
            for f in report.functions]
    out.append("")
    for f in report.functions:
        for r in f.reasons:
            out.append(f"- `{f.function}`: {r.count}× {r.kind or 'other'}: "
                       f"`{r.text}`")
    out += ["", totals(report), ""]
    return "\n".join(out)
