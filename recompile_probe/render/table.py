"""Rich tables for a terminal: summary, timeline, recompile reasons and verdict per sequence."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from .. import analysis
from ..explain import noise_note, slow_winner
from ..model import Report, Run
from . import cells

_EVENT_STYLE = {"compile": "cyan", "recompile": "bold red", "hit": "green", "error": "bold magenta",
                "eager": "yellow"}
_STATUS_STYLE = {"ok": "green", "error": "bold red", "unsupported": "dim"}
COLUMN_RECOMPILES = cells.COLUMNS[2]


def _summary(runs: list[Run], winner: Run | None) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    columns = cells.columns(runs)
    with_failed = cells.FAILED_COLUMN in columns
    for i, (header, _) in enumerate(columns):
        table.add_column(header, justify="left" if i == 0 or header in ("outputs", "status")
                         else "right", no_wrap=i != 0, overflow="fold")
    recompiles = columns.index(COLUMN_RECOMPILES)
    for run in runs:
        values = cells.row(run, with_failed)
        if run is winner:
            values[0] = f"★ {values[0]}"
        style = "bold green" if run is winner else ("dim" if run.status == "unsupported" else "")
        rendered = [Text(v) for v in values]
        rendered[-1].stylize(_STATUS_STYLE.get(run.status, ""))
        if run.outputs_match is False:
            rendered[-2].stylize("bold red")
        if run.recompiles:
            rendered[recompiles].stylize("red")
        if with_failed and run.failed_compiles:
            rendered[2].stylize("bold yellow")
        table.add_row(*rendered, style=style)
    return table


def _timeline(runs: list[Run], sequence: tuple[int, ...]) -> Table:
    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    table.add_column("B", no_wrap=True)
    for size in sequence:
        table.add_column(str(size), justify="center", no_wrap=True)
    for run in runs:
        if run.status == "unsupported":
            continue
        glyphs = [Text(cells.glyph(c), style="yellow" if cells.glyph(c) == cells.FAILED_GLYPH
                       else _EVENT_STYLE.get(c.event, "")) for c in run.calls]
        glyphs += [Text("")] * (len(sequence) - len(glyphs))
        table.add_row(run.strategy, *glyphs)
    return table


def _reasons(runs: list[Run]) -> Table | None:
    rows = [t for run in runs for t in analysis.transitions(run)]
    if not rows:
        return None
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for header in ("strategy", "call", "B", "id", "kind / reason"):
        table.add_column(header, no_wrap=header != "kind / reason", overflow="fold")
    for t in rows:
        before = "?" if t.batch_before is None else str(t.batch_before)
        why = Text(t.kind or "other", style="bold")
        why.append("\n" + cells.reason(t.reason), style="")
        table.add_row(t.strategy, str(t.call_index), f"{before} → {t.batch_after}",
                      t.compile_id or cells.NA, why)
    return table


def _sequence(name: str, sequence: tuple[int, ...], runs: list[Run]) -> Group:
    winner = analysis.best(runs)
    eager = next((r.eager_us for r in runs if r.eager_us is not None), None)
    title = f"\nSequence {name}: B = {' → '.join(map(str, sequence))}"
    if eager is not None:
        title += f" · eager {eager:.1f} µs/call"
    parts: list = [Text(title, style="bold"),
                   _summary(runs, winner),
                   Text(f"Timeline ({cells.LEGEND})", style="bold"),
                   _timeline(runs, sequence)]
    reasons = _reasons(runs)
    if reasons is not None:
        parts += [Text("\nRecompile reasons", style="bold"), reasons]
    notes = [line for line in (cells.error_line(r) for r in runs) if line]
    if notes:
        parts.append(Text("\nNot run or failed", style="bold"))
        parts += [Text(f"  {line}", style="magenta") for line in notes]
    run_notes = cells.run_notes(runs)
    if run_notes:
        parts.append(Text("\nNotes", style="bold"))
        parts += [Text(f"  {line}") for line in run_notes]
    parts.append(Text(f"\nVerdict: {analysis.verdict(name, runs)}", style="bold"))
    for note in (slow_winner(runs), noise_note(runs)):
        if note:
            parts.append(Text(f"Note: {note}", style="yellow"))
    return Group(*parts)


def render(report: Report, *, color: bool = False, width: int = 120, **_: object) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, no_color=not color,
                      highlight=False, color_system="auto" if color else None)
    env = report.environment
    first = report.runs[0] if report.runs else None
    console.print(Text.assemble(
        ("recompile-probe ", "bold"), f"{report.tool.version} · scenario ",
        (report.scenario.name, "bold"),
        f" · target {first.target if first else cells.NA} · backend "
        f"{first.backend if first else cells.NA} · torch {env.torch or cells.NA}"))
    if not report.complete:
        console.print(Text("Interrupted: only the runs that finished are shown.", style="bold red"))
    for name, sequence in report.sequences():
        console.print(_sequence(name, sequence, report.runs_for(name)))
    return buffer.getvalue()
