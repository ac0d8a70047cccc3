"""What `watch` and `summarize` show, built once for every format (``view``): a row, the reasons,
the user-line notes and the findings of each function, each child process, the totals and the
rank section. The renderers only lay it out. No torch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ...analysis.shared import label as shared_label
from ...analysis.verdicts import plural
from ...provenance.origin import at, at_with_callers, called_from
from ...reasons.causes import worth_showing
from ...reasons.kinds import INTERNAL_WORDS
from ...reasons.text import strip_local_scope
from ...records.origin import Origin
from ...records.watch import CauseCount, FunctionSummary, ProcessSummary, WatchReport
from .. import cells
from .ranks import RanksView
from .ranks import view as ranks_view

HEADERS = (
    "function",
    "where",
    "compiles",
    "recompiles",
    "graphs",
    "graph\nbreaks\nseen",
    "graph\nbreaks\n(Dynamo)",
    "cache\nentries",
    "guards",
    "shape\nguards",
    "limit\nhit",
)
#: after recompiles, shown only when a compile failed (a table of zeros says nothing)
FAILED_HEADER = "failed"
#: why the two graph-break columns may differ, printed under the table when they do
BREAKS_LEGEND = (
    "graph breaks: seen = Dynamo's graph-break list and the resume functions it compiled (the "
    "breaks listed below); (Dynamo) = its graph_break counter, which leaves some out (a branch "
    "on a data-dependent value)."
)
#: the compact table of a descendant process (within 100 columns)
CHILD_HEADERS = (
    "function",
    "where",
    "compiles",
    "recompiles",
    "failed",
    "cache\nentries",
    "limit\nhit",
)
CHILD_WIDTH = 100


def where(f: FunctionSummary) -> str:
    return f"{Path(f.filename).name if f.filename else '?'}:{cells.num(f.line)}"


def with_failed(functions: Sequence[FunctionSummary]) -> bool:
    return any(f.failed for f in functions)


def headers(functions: Sequence[FunctionSummary]) -> tuple[str, ...]:
    """The table's columns: ``failed`` only where some compile of these functions failed."""
    if not with_failed(functions):
        return HEADERS
    return (*HEADERS[:4], FAILED_HEADER, *HEADERS[4:])


def breaks_differ(functions: Sequence[FunctionSummary]) -> bool:
    """The two graph-break counts of some function disagree: the legend says why."""
    return any(
        f.graph_breaks != f.dynamo_graph_breaks and (f.graph_breaks or f.dynamo_graph_breaks)
        for f in functions
    )


def row(f: FunctionSummary, failed: bool = False) -> list[str]:
    """``failed``: with the failed column (headers() says when)."""
    return [
        f.function,
        where(f),
        str(f.compiles),
        str(f.recompiles),
        *([str(f.failed)] if failed else []),
        cells.num(f.graphs),
        cells.num(f.graph_breaks),
        cells.num(f.dynamo_graph_breaks),
        cells.num(f.cache_entries),
        cells.num(f.guard_count),
        cells.num(f.shape_env_guard_count),
        "YES" if f.recompile_limit_hit else "no",
    ]


def title(report: WatchReport) -> str:
    if report.kind == "summarize":
        return f"recompile-probe summarize · {report.source}"
    status = "interrupted" if report.interrupted else f"exit {report.exit_code}"
    return f"recompile-probe watch · {report.source} · {status}"


def totals(report: WatchReport) -> str:
    fs = report.functions
    line = (
        f"{plural(len(fs), 'compiled function')}: "
        f"{plural(sum(f.compiles for f in fs), 'compile')}, "
        f"{plural(sum(f.recompiles for f in fs), 'recompile')}"
    )
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


def child_row(f: FunctionSummary) -> list[str]:
    return [
        f.function,
        where(f),
        str(f.compiles),
        str(f.recompiles),
        str(f.failed),
        cells.num(f.cache_entries),
        "YES" if f.recompile_limit_hit else "no",
    ]


def child_line(p: ProcessSummary) -> str:
    """The one-line summary of a process that compiled nothing (or whose table is filtered out)."""
    if p.events:
        return f"{label(p)}: no function matches the filter."
    return f"{label(p)}: compiled nothing."


def all_totals(report: WatchReport) -> str:
    t = report.totals()
    line = (
        f"All {t['processes']} processes: {plural(t['functions'], 'compiled function')} "
        f"(counted per process), {plural(t['compiles'], 'compile')}, "
        f"{plural(t['recompiles'], 'recompile')}"
    )
    if t["failed"]:
        line += f", {t['failed']} failed"
    return line + "."


def reason_lines(f: FunctionSummary) -> list[str]:
    """A function's recompile causes and reasons, one string per line, unindented.

    Causes first (every failing guard grouped by what changed, most informative first, each with
    the recompiles it explains and its user line), then Dynamo's own first failing guard per
    recompile."""
    head = f"{f.function} ({where(f)})"
    if f.code_name:
        head += f" · compiled code {f.code_name}"
    if f.call_site:
        head += (
            f" · called at {Path(f.call_site.rsplit(':', 1)[0]).name}:"
            f"{f.call_site.rsplit(':', 1)[-1]}"
        )
    out = [head]
    if f.shared_by:
        out.append(f"  {shared_label(f.shared_by)}: they share its recompile limit")
        if f.shared_remedy:
            out.append(f"    what to do: {f.shared_remedy}")
    costly = [c for c in f.causes if c.recompiles]
    if worth_showing(f.causes, len(f.reasons)):
        out.append("  causes (every failing guard, grouped by what changed):")
        for c in costly:
            out.append(
                f"    {c.recompiles}× {c.label}" + ("  [incidental]" if c.incidental else "")
            )
            if c.origin:
                out.append(f"       {at(c.origin)}")
                out += [f"         {line}" for line in called_from(c.origin)]
        for c in f.causes:
            if not c.recompiles:
                out.append(f"    also failed in {plural(c.seen_in, 'recompile')}: {c.label}")
        out.append("  first failing guard, as Dynamo's recompiles log names it:")
    pad = "    " if len(out) > 1 else "  "
    for r in f.reasons:
        out.append(f"{pad}{r.count}× [{r.kind or 'other'}] {r.text}")
        if r.origin:
            out.append(f"{pad}   {at(r.origin)}")
            out += [f"{pad}     {line}" for line in called_from(r.origin)]
    return out


def line_notes(f: FunctionSummary) -> list[str]:
    """Graph breaks and specializations of a function at their user lines ([] when none)."""
    out = []
    for b in f.graph_break_origins:
        line = at(plain_origin(b.origin)) or "at an unknown line"
        reason = (b.reason or "").strip().splitlines()
        count = f" ({b.count}×)" if (b.count or 0) > 1 else ""
        out.append(f"  graph break {line}{count}" + (f": {reason[0][:100]}" if reason else ""))
    for sp in f.specializations:
        line = at(plain_origin(sp.origin)) or "at an unknown line"
        out.append(f"  {strip_local_scope(str(sp.source))} specialized to {sp.value} {line}")
    for e in f.internal_errors:
        failed = plural(e.count, "failed compile")
        out.append(f"  {failed}: {INTERNAL_WORDS} ({e.text})")
    return [f"{f.function} ({where(f)})", *out] if out else []


def plain_origin(origin: Origin | None) -> Origin | None:
    """The origin without its role note (the line says what happened there)."""
    return None if origin is None else replace(origin, role="created")


@dataclass(frozen=True)
class Finding:
    """One finding for a summary list: ``head``, Dynamo's ``text``, and the user line."""

    head: str
    text: str
    where: str = ""


@dataclass(frozen=True)
class FunctionView:
    name: str
    cells: tuple[str, ...]
    compiles: int
    recompiles: int
    failed: int
    limit_hit: bool
    #: "N recompiles"
    recompiles_text: str
    #: the heading line, then the causes and reasons; () without reasons
    reasons: tuple[str, ...]
    kinds: tuple[str, ...]
    #: the heading line, then graph breaks, specializations and failed compiles; () without any
    notes: tuple[str, ...]
    findings: tuple[Finding, ...]


@dataclass(frozen=True)
class ProcessView:
    label: str
    #: the one line of a process with no function to show
    line: str
    functions: tuple[FunctionView, ...]


@dataclass(frozen=True)
class FunctionsView:
    title: str
    headers: tuple[str, ...]
    functions: tuple[FunctionView, ...]
    #: what stands in for the table when the program's own process compiled nothing
    nothing: str
    breaks_differ: bool
    totals: str
    children: tuple[ProcessView, ...]
    all_totals: str
    ranks: RanksView | None


def view(report: WatchReport) -> FunctionsView:
    failed = with_failed(report.functions)
    others = children(report)
    return FunctionsView(
        title=title(report),
        headers=headers(report.functions),
        functions=tuple(_function(f, row(f, failed), child=False) for f in report.functions),
        nothing=(
            "The program's own process compiled nothing."
            if others
            else "No torch.compile activity was recorded."
        ),
        breaks_differ=breaks_differ(report.functions),
        totals=totals(report),
        children=tuple(
            ProcessView(
                label(p),
                child_line(p),
                tuple(_function(f, child_row(f), child=True) for f in p.functions),
            )
            for p in others
        ),
        all_totals=all_totals(report),
        ranks=ranks_view(report),
    )


def _function(f: FunctionSummary, cells_: list[str], child: bool) -> FunctionView:
    findings = [] if child else [_cause(f, c) for c in f.causes if c.recompiles]
    findings += [
        Finding(
            f"{r.count}× {r.kind or 'other'}", r.text, "" if child else at_with_callers(r.origin)
        )
        for r in f.reasons
    ]
    if not child:
        findings += [
            Finding(f"{e.count}× failed: {INTERNAL_WORDS}", e.text) for e in f.internal_errors
        ]
    return FunctionView(
        name=f.function,
        cells=tuple(cells_),
        compiles=f.compiles,
        recompiles=f.recompiles,
        failed=f.failed,
        limit_hit=bool(f.recompile_limit_hit),
        recompiles_text=plural(f.recompiles, "recompile"),
        reasons=tuple(reason_lines(f)) if f.reasons else (),
        kinds=tuple(r.kind or "other" for r in f.reasons),
        notes=tuple(line_notes(f)),
        findings=tuple(findings),
    )


def _cause(f: FunctionSummary, c: CauseCount) -> Finding:
    return Finding(f"cause of {c.recompiles}×", c.label, at_with_callers(c.origin))
