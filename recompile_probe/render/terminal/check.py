"""`check` in a terminal: every violation in one table, the baseline changes, one summary line."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ...analysis.check import Outcome
from .. import cells
from ..formats import Layout
from ..lines.check import sampled, summary
from ..lines.diff import view
from . import diff
from .console import draw


def _actual(value: object) -> str:
    return cells.NA if value is None else str(value)


def violations_table(outcome: Outcome) -> Table:
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for header in ("scenario", "sequence", "strategy", "budget", "limit", "actual", "why"):
        t.add_column(header, overflow="fold", no_wrap=header in ("budget", "limit", "actual"))
    for report, run, v in outcome.violations():
        why = "\n".join(v.reasons) or (run.error.message if run.error else "")
        t.add_row(
            report.scenario.name,
            run.sequence_name,
            run.strategy,
            Text(v.budget, style="bold red"),
            cells.limit(v),
            _actual(v.actual),
            why,
        )
    return t


def check(outcome: Outcome, layout: Layout) -> str:
    return draw(layout, lambda console: _check(console, outcome, layout.width))


def _check(console: Console, outcome: Outcome, width: int) -> None:
    if outcome.violations():
        console.print(Text("Budget violations", style="bold red"))
        console.print(violations_table(outcome))
    for scenario, error in outcome.failures:
        console.print(
            Text(
                f"{scenario.path or scenario.name}: could not run: {error.message}",
                style="bold magenta",
            )
        )
    if outcome.changes:
        console.print(Text("\nChanges against the baseline", style="bold"))
        shown = view(list(outcome.pairs), outcome.tolerance, width, only_changed=True)
        console.print(diff.table(shown.rows))
        diff.print_sequences(console, shown)
    for name in outcome.without_baseline:
        console.print(f"no baseline for scenario {name!r}: nothing compared")
    for line in sampled(outcome):
        console.print(Text(line, style="yellow"))
    console.print(Text(summary(outcome), style="bold red" if outcome.exit_code else "bold green"))
