"""Per-function tables for `watch` and `summarize`."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Callable

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from .. import causes
from ..analysis import plural
from ..model import FunctionSummary, ProcessSummary, WatchReport
from . import cells

HEADERS = ("function", "where", "compiles", "recompiles", "graphs", "graph\nbreaks",
           "cache\nentries", "guards", "shape\nguards", "limit\nhit")
#: the compact table of a descendant process (within 100 columns)
CHILD_HEADERS = ("function", "where", "compiles", "recompiles", "failed", "cache\nentries",
                 "limit\nhit")
CHILD_WIDTH = 100


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


def children(report: WatchReport) -> list[ProcessSummary]:
    return [p for p in report.processes if not p.main]


def label(p: ProcessSummary) -> str:
    """pid, what the process is, and where it came from."""
    parts = [f"pid {p.pid}"]
    if p.role:
        parts.append(p.role)
    elif p.argv and p.forked_from is None:
        parts.append(" ".join(p.argv)[:60])
    if p.forked_from is not None:
        parts.append(f"forked from {p.forked_from}")
    return " · ".join(parts)


def _child_row(f: FunctionSummary) -> list[str]:
    return [f.function, _where(f), str(f.compiles), str(f.recompiles), str(f.failed),
            cells.num(f.cache_entries), "YES" if f.recompile_limit_hit else "no"]


def child_line(p: ProcessSummary) -> str:
    """The one-line summary of a process that compiled nothing (or whose table is filtered out)."""
    if p.events:
        return f"{label(p)}: no function matches the filter."
    return f"{label(p)}: compiled nothing."


def all_totals(report: WatchReport) -> str:
    t = report.totals()
    line = (f"All {t['processes']} processes: {plural(t['functions'], 'compiled function')} "
            f"(counted per process), {plural(t['compiles'], 'compile')}, "
            f"{plural(t['recompiles'], 'recompile')}")
    if t["failed"]:
        line += f", {t['failed']} failed"
    return line + "."


def reason_lines(f: FunctionSummary) -> list[str]:
    """A function's recompile causes and reasons, one string per line, unindented.

    Causes first (every failing guard grouped by what changed, most informative first, each with
    the recompiles it explains and its user line), then Dynamo's own first failing guard per
    recompile, as before."""
    head = f"{f.function} ({_where(f)})"
    if f.code_name:
        head += f" · compiled code {f.code_name}"
    if f.call_site:
        head += f" · called at {Path(f.call_site.rsplit(':', 1)[0]).name}:" \
                f"{f.call_site.rsplit(':', 1)[-1]}"
    out = [head]
    costly = [c for c in f.causes if c.recompiles]
    if causes.worth_showing(f.causes, len(f.reasons)):
        out.append("  causes (every failing guard, grouped by what changed):")
        for c in costly:
            out.append(f"    {c.recompiles}× {c.label}" + ("  [incidental]" if c.incidental
                                                        else ""))
            if c.origin:
                out.append(f"       {causes.at(c.origin)}")
        for c in f.causes:
            if not c.recompiles:
                out.append(f"    also failed in {plural(c.seen_in, 'recompile')}: {c.label}")
        out.append("  first failing guard, as Dynamo's recompiles log names it:")
    pad = "    " if len(out) > 1 else "  "
    for r in f.reasons:
        out.append(f"{pad}{r.count}× [{r.kind or 'other'}] {r.text}")
        if r.origin:
            out.append(f"{pad}   {causes.at(r.origin)}")
    return out


def line_notes(f: FunctionSummary) -> list[str]:
    """Graph breaks and specializations of a function at their user lines ([] when none)."""
    out = []
    for b in f.graph_break_origins:
        where = causes.at(_plain(b.get("origin"))) or "at an unknown line"
        reason = (b.get("reason") or "").strip().splitlines()
        count = f" ({b['count']}×)" if (b.get("count") or 0) > 1 else ""
        out.append(f"  graph break {where}{count}" + (f": {reason[0][:100]}" if reason else ""))
    for sp in f.specializations:
        where = causes.at(_plain(sp.get("origin"))) or "at an unknown line"
        src = str(sp.get("source"))
        out.append(f"  {origins_strip(src)} specialized to {sp.get('value')} {where}")
    return [f"{f.function} ({_where(f)})", *out] if out else []


def _plain(origin: dict | None) -> dict | None:
    """The origin without its role note (the line says what happened there)."""
    return None if not origin else {**origin, "role": "created"}


def origins_strip(source: str) -> str:
    from ..origins import strip_local_scope

    return strip_local_scope(source)


def _lines_section(console: Console, functions: tuple[FunctionSummary, ...], indent: str,
                   wrap: bool = False) -> None:
    notes = [line for f in functions for line in line_notes(f)]
    if not notes:
        return
    console.print(Text(f"{indent.rstrip()}Graph breaks and specializations at their user lines"
                       .strip(), style="bold"))
    for line in notes:
        console.print(f"{indent}{line}", soft_wrap=not wrap, markup=False)


def _reasons(console: Console, functions: tuple[FunctionSummary, ...], indent: str,
             wrap: bool = False) -> None:
    for f in functions:
        if not f.reasons:
            continue
        for line in reason_lines(f):
            console.print(f"{indent}{line}", soft_wrap=not wrap, markup=False)


def _filled(table: Table, functions: list[FunctionSummary],
            row_of: "Callable[[FunctionSummary], list[str]]") -> Table:
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


def render(report: WatchReport, *, color: bool = False, width: int = 120) -> str:
    buffer = io.StringIO()

    def make_console(w: int) -> Console:
        return Console(file=buffer, width=w, force_terminal=color, no_color=not color,
                       highlight=False, color_system="auto" if color else None)

    console = make_console(width)
    console.print(Text(_title(report), style="bold"))
    others = children(report)
    if not report.functions:
        console.print("The program's own process compiled nothing." if others else
                      "No torch.compile activity was recorded.")
    else:
        console.print(_filled(_table(HEADERS), report.functions, _row))
        if any(f.reasons for f in report.functions):
            console.print(Text("Recompile reasons (distinct, with how often each occurred)",
                               style="bold"))
            _reasons(console, report.functions, "  ")
        _lines_section(console, report.functions, "  ")
        console.print(Text(totals(report), style="bold"))
    if not others:
        return buffer.getvalue()
    narrow = make_console(min(width, CHILD_WIDTH))
    narrow.print(Text(f"Child processes ({len(others)}), each with its own compile ids",
                      style="bold"))
    for p in others:
        if not p.functions:
            narrow.print(f"  {child_line(p)}", soft_wrap=True, markup=False)
            continue
        narrow.print(Text(f"  {label(p)}", style="bold"))
        table = _filled(_table(CHILD_HEADERS), p.functions, _child_row)
        narrow.print(Padding(table, (0, 0, 0, 4), expand=False))
        _reasons(narrow, p.functions, "    ", wrap=True)
    narrow.print(Text(all_totals(report), style="bold"))
    return buffer.getvalue()


def markdown(report: WatchReport) -> str:
    out = [f"## {_title(report)}", ""]
    headers = [h.replace("\n", " ") for h in HEADERS]
    out += ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in _row(f)) + " |"
            for f in report.functions]
    out.append("")
    for f in report.functions:
        for c in f.causes:
            if c.recompiles:
                where = causes.at(c.origin)
                out.append(f"- `{f.function}`: cause of {c.recompiles}×: `{c.label}`"
                           + (f" ({where})" if where else ""))
        for r in f.reasons:
            out.append(f"- `{f.function}`: {r.count}× {r.kind or 'other'}: "
                       f"`{r.text}`")
    out += ["", totals(report), ""]
    for p in children(report):
        if not p.functions:
            out += [f"- {child_line(p)}", ""]
            continue
        headers = [h.replace("\n", " ") for h in CHILD_HEADERS]
        out += [f"### {label(p)}", "", "| " + " | ".join(headers) + " |",
                "|" + "---|" * len(headers)]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in _child_row(f)) + " |"
                for f in p.functions]
        out.append("")
        for f in p.functions:
            for r in f.reasons:
                out.append(f"- `{f.function}`: {r.count}× {r.kind or 'other'}: `{r.text}`")
        out.append("")
    if children(report):
        out += [all_totals(report), ""]
    return "\n".join(out)
