"""`check` in a terminal: every violation in one table, the baseline changes, one summary line."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ...analysis.check import Outcome
from ...scenario.keys import MAX_KEYS
from .. import cells
from ..lines.check import summary
from ..lines.diff import sequences
from . import diff


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
            f"≤ {v.limit}" if v.budget in MAX_KEYS else str(v.limit),
            _actual(v.actual),
            why,
        )
    return t


def render(outcome: Outcome, *, color: bool = False, width: int = 120) -> str:
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        color_system="auto" if color else None,
    )
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
        console.print(diff.table(outcome.pairs, outcome.tolerance, only_changed=True))
        changed = [
            p
            for p in outcome.pairs
            if any(c.scenario == p.key[0] and c.sequence == p.key[1] for c in outcome.changes)
        ]
        for line in sequences(changed, width):
            console.print(Text(line), soft_wrap=False, overflow="fold")
    for name in outcome.without_baseline:
        console.print(f"no baseline for scenario {name!r}: nothing compared")
    console.print(Text(summary(outcome), style="bold red" if outcome.exit_code else "bold green"))
    return buffer.getvalue()
