"""`explain` output: entries, guard diffs, classified reasons with measured fixes, and costs."""

from __future__ import annotations

import io
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .. import analysis, reasons
from .. import explain as ex
from ..analysis import NOISE_RATIO, plural
from ..model import CacheEntry, Report, Run
from ..sizes import Point
from . import cells

COST_HEADERS = ("strategy", "compiles", "µs/call", "eager µs", "guard check µs",
                "cold guard µs")
COST_LEGEND = ("µs/call: median of the last call repeated (marks included; ~: too noisy to "
               f"rank, median > {NOISE_RATIO}x the fastest sample); guard check µs: warm "
               "guard_manager.check of the entry that served it, on the real inputs; cold guard "
               "µs: CompilationMetrics.guard_latency_us, measured at compile with caches "
               "flushed, not a steady-state cost.")


def _cost_row(run: Run) -> list[str]:
    return [run.strategy, cells.num(run.compiles), cells.steady(run),
            cells.num(run.eager_us, "{:.1f}"), cells.num(run.guard_check_us, "{:.2f}"),
            cells.num(run.guard_latency_us)]


def _headline(run: Run, width: int = 100) -> str:
    counts = ("n/a compiles" if run.compiles is None else
              f"{plural(run.compiles, 'compile')}, {plural(run.recompiles or 0, 'recompile')}")
    head, tail = f"{run.strategy} · sequence {run.sequence_name}: ", f" · {counts}"
    points = analysis.run_points(run)
    line = head + analysis.sequence_label(points, width - len(head) - len(tail)) + tail
    if len(line) <= width or analysis.batch_only(points):
        return line
    # a few long points do not abbreviate: the sequence gets a line of its own
    return (f"{run.strategy} · sequence {run.sequence_name} · {counts}\n  "
            + analysis.sequence_label(points, width - 2))


def _made(run: Run, e: CacheEntry) -> str:
    """Which call made an entry, and at which point: "call 1, B=2" as always for a batch-only
    run, "call 1 (B 2, S 7)" with several symbols."""
    if e.call_index is None:
        return "made before the sequence"
    if cells.plain([run]):
        return f"call {e.call_index}, B={e.batch_size}"
    if analysis.call_point(run, e.call_index) is not None:
        return f"call {e.call_index} ({analysis.at_call(run, e.call_index)})"
    return f"call {e.call_index}" + (f" ({analysis.named(Point.of(e.sizes))})" if e.sizes else "")


def _entry_lines(run: Run) -> list[str]:
    lines: list[str] = []
    frame = None
    for e in run.entries:
        if (e.function, e.filename) != frame:
            frame = (e.function, e.filename)
            lines.append(f"Cache entries of {e.function} ({e.filename}:{e.line})")
        made = _made(run, e)
        lines.append(f"  {e.compile_id}  {made} · guard_count {cells.num(e.guard_count)} "
                     f"(metrics) · {cells.num(e.leaf_guard_count)} leaf guards (tree)")
        lines += _wrapped("      by kind: ", [f"{k} {n}" for k, n in ex.kinds(e).items()])
        shape = ex.shape_env_guards(e)
        lines += _fold("      shape-env guards: " + ("; ".join(shape) if shape else "none"),
                       len("      shape-env guards: "))
    return lines


def _wrapped(head: str, items: list[str], width: int = 96) -> list[str]:
    """Comma-separated items over as many lines as they need, continuation lines indented."""
    lines, current = [], head
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else "")
        if len(current) + len(piece) + 1 > width and current.strip() != head.strip():
            lines.append(current.rstrip())
            current = " " * len(head)
        current += piece + " "
    lines.append(current.rstrip() if items else head + cells.NA)
    return lines


def _fold(line: str, indent: int, width: int = 100) -> list[str]:
    """A line longer than ``width`` broken after its "; " separators, continuation lines
    indented (several symbols make more shape guards and size changes than one line holds);
    a line that fits is left alone."""
    if len(line) <= width or "; " not in line:
        return [line]
    lines, current = [], ""
    for piece in line.split("; "):
        if current and len(current) + len(piece) + 2 > width:
            lines.append(current + ";")
            current = " " * indent + piece
        else:
            current = f"{current}; {piece}" if current else piece
    return lines + [current]


def _at(origin: dict | None, indent: str = "      ", static: bool = False) -> list[str]:
    """The user line under a guard or reason line; nothing where it is unknown."""
    text = cells.origin(origin, 100 - len(indent), static)
    return [] if text is None else [indent + text]


def _diff_lines(d: ex.GuardDiff) -> list[str]:
    lines = [f"Guard diff {d.function} {d.old} → {d.new}"]
    for c in d.changed:
        lines += _fold(f"  ~ {c.describe()}", 6)
        lines += _at(c.origin)
    for sign, guards in (("+", d.added), ("-", d.removed)):
        for g in guards:
            lines.append(f"  {sign} {g.kind} {g.text}")
            lines += _at(g.origin)
    if len(lines) == 1:
        lines.append("  (no guard differs)")
    return lines


def _recompile_lines(r: ex.Recompile, plain: bool = True) -> list[str]:
    before = "?" if r.batch_before is None else r.batch_before
    change = f"B {before} → {r.batch_after}" if plain or not r.change else r.change
    lines = [f"Recompile at call {r.call_index} ({change}), "
             f"{r.compile_id}: {r.reason_kind or 'other'}"]
    found = list(r.reason_origins or ())
    for line in cells.reason(r.reason).splitlines():
        lines.append(f"  {line}")
        if reasons.failure_lines(line) and found:
            lines += _at(found.pop(0), "    ", " size mismatch " in line)
    d = r.reason_detail or {}
    # the symbol whose dim failed, when several could have: a batch-only run has only B
    facts = [f"{k} {d[k]}" for k in (() if plain else ("symbol",)) + (
        "source", "what", "dim", "expected", "actual") if d.get(k) is not None]
    if facts:
        lines.append("  " + ", ".join(facts))
    if r.fixes:
        lines.append("  Measured fixes (no recompile on this call, outputs match eager):")
        for fix in r.fixes:
            cost = cells.num(fix.steady_state_us, "{:.1f}")
            compiles = "n/a compiles" if fix.compiles is None else plural(fix.compiles, "compile")
            lines.append(f"    {fix.strategy} ({compiles}, {cost} µs/call):")
            lines += [f"        {line}" for line in fix.change]
            if fix.advice:
                lines.append("      not measured, advice (no run of this report executed "
                             "these), inside the compiled function:")
                lines += [f"        {line}" for line in fix.advice]
    else:
        lines.append(f"  No strategy in this run removes it: {r.no_fix_why}")
    if r.specialization:
        lines += _wrap_text("  Fix the line: " + r.specialization, "    ")
    return lines


def _wrap_text(text: str, indent: str, width: int = 100) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False,
                         break_long_words=False)


def _blocks(x: ex.Explanation) -> list[list[str]]:
    blocks = [_entry_lines(x.run)]
    blocks += [_diff_lines(d) for d in x.diffs]
    plain = cells.plain([x.run])
    blocks += [_recompile_lines(r, plain) for r in x.recompiles]
    return blocks


def render(report: Report, explanations: list[ex.Explanation], notes: list[str], *,
           color: bool = False, width: int = 100) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, no_color=not color,
                      highlight=False, color_system="auto" if color else None)
    if not explanations:
        console.print("Nothing to explain: no chosen strategy compiled more than once. "
                      "Pick one with --strategy.")
    for x in explanations:
        console.print(Text("\n" + _headline(x.run, width), style="bold"))
        for block in _blocks(x):
            console.print(Text("\n".join(block)), soft_wrap=False, overflow="fold")
    for name, _ in report.sequences():
        runs = [r for r in report.runs_for(name) if r.status != "unsupported"]
        if not runs or not any(x.run.sequence_name == name for x in explanations):
            continue
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True,
                      title=f"Runtime cost, sequence {name} (last call repeated)",
                      title_justify="left")
        for i, header in enumerate(COST_HEADERS):
            table.add_column(header, justify="left" if i == 0 else "right")
        for run in runs:
            table.add_row(*_cost_row(run))
        console.print(table)
        console.print(Text(COST_LEGEND, style="dim"))
    for note in notes:
        console.print(Text(f"Note: {note}", style="bold yellow"))
    return buffer.getvalue()


def markdown(report: Report, explanations: list[ex.Explanation], notes: list[str]) -> str:
    out = [f"## recompile-probe explain: {report.scenario.name}", ""]
    for x in explanations:
        title, _, points = _headline(x.run).partition("\n")
        out += [f"### {title}", ""] + ([points.strip(), ""] if points else []) + ["```text"]
        for block in _blocks(x):
            out += block + [""]
        out[-1] = "```"
        out.append("")
    for name, _ in report.sequences():
        runs = [r for r in report.runs_for(name) if r.status != "unsupported"]
        out += [f"Runtime cost, sequence `{name}`:", "",
                "| " + " | ".join(COST_HEADERS) + " |", "|" + "---|" * len(COST_HEADERS)]
        out += ["| " + " | ".join(_cost_row(r)) + " |" for r in runs] + ["", COST_LEGEND, ""]
    out += [f"> {n}" for n in notes]
    return "\n".join(out) + "\n"


def as_json(report: Report, explanations: list[ex.Explanation], notes: list[str]) -> str:
    import json

    data: dict[str, Any] = ex.to_dict(report, explanations, notes)
    return json.dumps(data, indent=2, default=list) + "\n"
