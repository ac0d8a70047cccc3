"""A run report in a terminal: summary, timeline, recompile reasons and verdict per sequence."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ...analysis.notes import noise_note, slow_winner
from ...analysis.ranks import rank_cell
from ...analysis.ranks import verdict as rank_verdict
from ...analysis.sequence import batch_only, moved, points_of, sequence_label, stepped, transitions
from ...analysis.verdicts import best, verdict
from ...records.ranks import RankRuns
from ...records.report import Report
from ...records.run import Run
from ...sizes.points import Point
from .. import cells
from ..formats import Layout
from ..lines import coverage
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
    for i, (header, _) in enumerate(columns):
        table.add_column(
            header,
            justify="left" if i == 0 or header in ("outputs", "status") else "right",
            no_wrap=i != 0,
            overflow="fold",
            min_width=names if i == 0 and whole else None,
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


def _timeline(runs: list[Run], points: list[Point], width: int) -> list[Table]:
    """Marks under their points, a column per point; as many tables as it takes to stay within
    ``width``. A batch-only sequence heads its columns with B's sizes,
    several symbols get a header row each."""
    shown = [r for r in runs if r.status != "unsupported"]
    groups = {id(r): cells.by_point(r, len(points)) for r in shown}
    batch = batch_only(points)
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


def _reasons(runs: list[Run], verbose: bool = False, width: int = 120) -> Table | None:
    """A row per recompile: its kind, then its causes with the other failing guards counted
    (every guard of every entry, with ``verbose``)."""
    rows = [(run, t) for run in runs for t in transitions(run)]
    if not rows:
        return None
    plain = cells.plain(runs)
    fixed = [
        max([len(h), *(len(c) for c in column)])
        for h, column in zip(
            ("strategy", "call", "change", "id"),
            zip(
                *[
                    (
                        t.strategy,
                        str(t.call_index),
                        f"{t.batch_before} → {t.batch_after}" if plain else moved(run, t),
                        t.compile_id or cells.NA,
                    )
                    for run, t in rows
                ]
            ),
        )
    ]
    room = width - sum(fixed) - 2 * len(fixed)  # rich: two spaces between columns
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for header in ("strategy", "call", "B" if plain else "change", "id", "kind / reason"):
        table.add_column(header, no_wrap=header != "kind / reason", overflow="fold")
    for run, t in rows:
        before = "?" if t.batch_before is None else str(t.batch_before)
        why = Text(t.kind or "other", style="bold")
        why.append(
            "\n" + cells.reason_with_origins(run, t.compile_id, t.reason, not verbose, room),
            style="",
        )
        table.add_row(
            t.strategy,
            str(t.call_index),
            f"{before} → {t.batch_after}" if plain else moved(run, t),
            t.compile_id or cells.NA,
            why,
        )
    return table


def _sequence(name: str, runs: list[Run], width: int, verbose: bool = False) -> Group:
    winner = best(runs)
    points = points_of(runs)
    eager = cells.eager_label(runs)
    head, tail = f"Sequence {name}: ", "" if eager is None else f" · {eager}"
    title = "\n" + head + sequence_label(points, width - len(head) - len(tail)) + tail
    parts: list = [
        Text(title, style="bold"),
        _summary(runs, winner, width),
        Text(f"Timeline ({cells.LEGEND})", style="bold"),
    ]
    if any(map(stepped, runs)):
        parts.append(Text(cells.GROUPED))
    parts += _timeline(runs, points, width)
    reasons = _reasons(runs, verbose, width)
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
    parts.append(Text(f"\nVerdict: {verdict(name, runs)}", style="bold"))
    for note in (slow_winner(runs), noise_note(runs)):
        if note:
            parts.append(Text(f"Note: {note}", style="yellow"))
    return Group(*parts)


def _ranks(rank_runs: RankRuns, sequence: str) -> Group:
    """Each strategy's ranks side by side, whether they agree, and the line that says which
    strategy makes every rank compile the same."""
    here = [c for c in rank_runs.comparisons if c.sequence == sequence]
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    table.add_column("strategy", no_wrap=True)
    ranks = [str(r) for r in range(rank_runs.world_size)]
    for r in ranks:
        table.add_column(f"rank {r}", no_wrap=True)
    table.add_column("ranks agree", no_wrap=True)
    winner = rank_runs.best.get(sequence)
    for c in here:
        agree = {True: "yes", False: "NO", None: "n/a"}[c.agree]
        if c.agree is False and c.differs:
            agree += f" ({', '.join(c.differs)})"
        name = f"★ {c.strategy}" if c.strategy == winner else c.strategy
        style = "bold green" if c.strategy == winner else ("bold red" if c.agree is False else "")
        table.add_row(name, *[rank_cell(c.by_rank.get(r)) for r in ranks], agree, style=style)
    return Group(
        Text(f"\nRanks: {sequence} on {rank_runs.world_size} ranks", style="bold"),
        table,
        Text(f"\nRanks verdict: {rank_verdict(rank_runs, sequence)}", style="bold"),
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
    for name, _sizes in report.sequences():
        runs = report.runs_for(name)
        ranks = sorted({r.rank for r in runs if r.rank is not None})
        if not ranks:
            console.print(_sequence(name, runs, width, verbose))
            continue
        for rank in ranks:  # each rank's own sizes, table and timeline
            mine = [r for r in runs if r.rank == rank]
            console.print(_sequence(f"{name} · rank {rank}", mine, width, verbose))
        if report.rank_runs is not None:
            console.print(_ranks(report.rank_runs, name))
