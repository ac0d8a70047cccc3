"""A run report in a terminal: summary, timeline, recompile reasons and verdict per sequence."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ...records.report import Report
from ...records.run import Run
from .. import cells
from ..formats import Layout
from ..lines import coverage
from ..lines.reports import RanksLines, SequenceLines, of_report
from .console import draw

_EVENT_STYLE = {
    "compile": "cyan",
    "recompile": "bold red",
    "hit": "green",
    "error": "bold magenta",
    "eager": "yellow",
}
_STATUS_STYLE = {"ok": "green", "error": "bold red", "unsupported": "dim"}
COLUMN_RECOMPILES = cells.COLUMNS[2]
_NAME_WIDTH = 32


def _summary(runs: list[Run], winner: Run | None, width: int) -> Table:
    columns = cells.columns(runs)
    with_failed = cells.FAILED_COLUMN in columns
    rows = [cells.row(run, with_failed, cells.COVERS_COLUMN in columns) for run in runs]
    # a strategy's name is never broken (the widest built-in is 21 wide; "★ " adds 2); only
    # a custom name past _NAME_WIDTH folds
    names = min(_NAME_WIDTH, max((len(r.strategy) + 2 * (r is winner) for r in runs), default=0))
    natural = [
        max([len(ln) for ln in header.splitlines()] + [len(row[i]) for row in rows])
        for i, (header, _) in enumerate(columns)
    ]
    natural[0] = max(natural[0], names)
    # two spaces between columns where they fit, else one: no cell is cut for a gap; where
    # even one space is too many, the name folds (the figures stay whole)
    tight = sum(natural) + 2 * (len(columns) - 1) > width
    whole = sum(natural) + len(columns) - 1 <= width
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
        collapse_padding=True,
        padding=(0, 0) if tight else (0, 1),
    )
    # past the width, the coverage cell (prose) folds onto a second line; the name never
    # shrinks away, nor does a figure
    folds = {0} | (
        {columns.index(cells.COVERS_COLUMN)}
        if not whole and cells.COVERS_COLUMN in columns
        else set()
    )
    for i, (header, _) in enumerate(columns):
        table.add_column(
            header,
            justify="left" if i == 0 or header in ("outputs", "status") else "right",
            no_wrap=i not in folds,
            overflow="fold",
            min_width=names if i == 0 and (whole or len(folds) > 1) else None,
        )
    recompiles = columns.index(COLUMN_RECOMPILES)
    for run, values in zip(runs, rows, strict=True):
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


def _timeline(seq: SequenceLines, width: int) -> list[Table]:
    """Marks under their points, a column per point; as many tables as it takes to stay within
    ``width``. A batch-only sequence heads its columns with B's sizes,
    several symbols get a header row each."""
    points = seq.points
    shown = [r for r in seq.runs if r.status != "unsupported"]
    groups = {id(r): cells.by_point(r, len(points)) for r in shown}
    batch = seq.batch_only
    symbols = list(dict.fromkeys(s for p in points for s in p.symbols))
    heads = [[str(p.get(s)) if p.get(s) is not None else "" for s in symbols] for p in points]
    widths = [
        max([len(h) for h in head] + [len(groups[id(r)][k]) for r in shown] + [1])
        for k, head in enumerate(heads)
    ]
    first = max([len(r.strategy) for r in shown] + [len(s) for s in symbols] + [1])
    chunks: list[list[int]] = [[]]
    used = first
    for k, w in enumerate(widths):
        if chunks[-1] and used + w + 2 > width:  # rich: one space either side of each column
            chunks.append([])
            used = first
        chunks[-1].append(k)
        used += w + 2
    tables = []
    for chunk in chunks:
        table = Table(box=None, pad_edge=False, show_header=batch, header_style="bold")
        table.add_column(symbols[0] if batch else "", no_wrap=True)
        for k in chunk:
            table.add_column(heads[k][0] if batch else "", justify="center", no_wrap=True)
        if not batch:
            for j, symbol in enumerate(symbols):
                table.add_row(*[Text(symbol)] + [Text(heads[k][j]) for k in chunk], style="bold")
        for run in shown:
            row = [Text(run.strategy)]
            for k in chunk:
                marks = Text()
                for c in groups[id(run)][k]:
                    mark = cells.glyph(c)
                    marks.append(
                        mark,
                        style="yellow"
                        if mark == cells.FAILED_GLYPH
                        else _EVENT_STYLE.get(c.event, ""),
                    )
                row.append(marks)
            table.add_row(*row)
        tables.append(table)
    return tables


def _reasons(seq: SequenceLines, verbose: bool = False, width: int = 120) -> Table | None:
    """A row per recompile: its kind, then its causes with the other failing guards counted
    (every guard of every entry, with ``verbose``)."""
    if not seq.recompiles:
        return None
    headers = ("strategy", "call", "B" if seq.plain else "change", "id", "kind / reason")
    fixed = [
        max([len(h), *(len(c) for c in column)])
        for h, column in zip(
            headers[:4],
            zip(
                *[
                    (t.strategy, str(t.call_index), t.change, t.compile_id or cells.NA)
                    for t in seq.recompiles
                ]
            ),
        )
    ]
    room = width - sum(fixed) - 2 * len(fixed)  # rich: two spaces between columns
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for header in headers:
        table.add_column(header, no_wrap=header != "kind / reason", overflow="fold")
    for t in seq.recompiles:
        why = Text(t.kind, style="bold")
        why.append(
            "\n" + cells.reason_with_origins(t.run, t.compile_id, t.reason, not verbose, room),
            style="",
        )
        table.add_row(t.strategy, str(t.call_index), t.change, t.compile_id or cells.NA, why)
    return table


def _sequence(seq: SequenceLines, width: int, verbose: bool = False) -> Group:
    runs = list(seq.runs)
    eager = cells.eager_label(runs)
    head, tail = f"Sequence {seq.title}: ", "" if eager is None else f" · {eager}"
    title = "\n" + head + seq.label(width - len(head) - len(tail)) + tail
    parts: list = [
        Text(title, style="bold"),
        _summary(runs, seq.winner, width),
        Text(f"Timeline ({cells.LEGEND})", style="bold"),
    ]
    if seq.stepped:
        parts.append(Text(cells.GROUPED))
    parts += _timeline(seq, width)
    reasons = _reasons(seq, verbose, width)
    if reasons is not None:
        parts += [Text("\nRecompile reasons", style="bold"), reasons]
    covered = coverage.section(runs)
    if covered:
        parts.append(Text("\nCoverage", style="bold"))
        parts += [Text(line) for line in covered]
    notes = [line for line in (cells.error_line(r) for r in runs) if line]
    if notes:
        parts.append(Text("\nNot run or failed", style="bold"))
        parts += [Text(f"  {line}", style="magenta") for line in notes]
    run_notes = cells.run_notes(runs)
    if run_notes:
        parts.append(Text("\nNotes", style="bold"))
        parts += [Text(f"  {line}") for line in run_notes]
    parts.append(Text(f"\nVerdict: {seq.verdict}", style="bold"))
    parts += [Text(f"Note: {note}", style="yellow") for note in seq.notes]
    return Group(*parts)


def _ranks(ranks: RanksLines) -> Group:
    """Each strategy's ranks side by side, whether they agree, and the line that says which
    strategy makes every rank compile the same."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    table.add_column("strategy", no_wrap=True)
    for r in range(ranks.world_size):
        table.add_column(f"rank {r}", no_wrap=True)
    table.add_column("ranks agree", no_wrap=True)
    for row in ranks.rows:
        agree = {True: "yes", False: "NO", None: "n/a"}[row.agree]
        if row.agree is False and row.differs:
            agree += f" ({', '.join(row.differs)})"
        name = f"★ {row.strategy}" if row.best else row.strategy
        style = "bold green" if row.best else ("bold red" if row.agree is False else "")
        table.add_row(name, *row.cells, agree, style=style)
    return Group(
        Text(f"\nRanks: {ranks.sequence} on {ranks.world_size} ranks", style="bold"),
        table,
        Text(f"\nRanks verdict: {ranks.verdict}", style="bold"),
    )


def reports(value: Sequence[Report], layout: Layout) -> str:
    return "\n".join(draw(layout, partial(_report, report=r, layout=layout)) for r in value)


def _report(console: Console, *, report: Report, layout: Layout) -> None:
    width, verbose = layout.width, layout.verbose
    env = report.environment
    first = report.runs[0] if report.runs else None
    console.print(
        Text.assemble(
            ("recompile-probe ", "bold"),
            f"{report.tool.version} · scenario ",
            (report.scenario.name, "bold"),
            f" · target {first.target if first else cells.NA} · backend "
            f"{first.backend if first else cells.NA} · torch {env.torch or cells.NA}",
        )
    )
    for line in cells.settings_lines(env):
        console.print(Text(line, style="yellow"))
    if not report.complete:
        console.print(Text("Interrupted: only the runs that finished are shown.", style="bold red"))
    for part in of_report(report):
        if isinstance(part, SequenceLines):
            console.print(_sequence(part, width, verbose))
        else:
            console.print(_ranks(part))
