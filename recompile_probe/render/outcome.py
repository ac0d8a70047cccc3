"""What `check` prints: every violation in one table, the baseline changes, one summary line."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..budgets import MAX_KEYS
from ..check import Outcome
from . import cells, comparison


def _actual(value: object) -> str:
    return cells.NA if value is None else str(value)


def summary(outcome: Outcome) -> str:
    runs = sum(len(r.runs) for r in outcome.reports)
    parts = [f"{len(outcome.reports)} scenario{'s' * (len(outcome.reports) != 1)}, {runs} runs, "
             f"{outcome.budgets_checked} budgets checked: {len(outcome.violations())} violated"]
    if outcome.changes or outcome.without_baseline:
        parts.append(f"baseline: {len(outcome.regressions())} regressions, "
                     f"{len(outcome.improvements())} improvements"
                     + (" (accepted: baseline updated)" if outcome.baseline_accepted else ""))
    if outcome.failures:
        parts.append(f"{len(outcome.failures)} scenario(s) could not run")
    return "; ".join(parts) + "."


def violations_table(outcome: Outcome) -> Table:
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for header in ("scenario", "sequence", "strategy", "budget", "limit", "actual", "why"):
        t.add_column(header, overflow="fold", no_wrap=header in ("budget", "limit", "actual"))
    for report, run, v in outcome.violations():
        why = "\n".join(v.reasons) or (run.error.message if run.error else "")
        t.add_row(report.scenario.name, run.sequence_name, run.strategy,
                  Text(v.budget, style="bold red"),
                  f"≤ {v.limit}" if v.budget in MAX_KEYS else str(v.limit),
                  _actual(v.actual), why)
    return t


def render(outcome: Outcome, *, color: bool = False, width: int = 120) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, no_color=not color,
                      highlight=False, color_system="auto" if color else None)
    if outcome.violations():
        console.print(Text("Budget violations", style="bold red"))
        console.print(violations_table(outcome))
    for scenario, error in outcome.failures:
        console.print(Text(f"{scenario.path or scenario.name}: could not run: {error.message}",
                           style="bold magenta"))
    if outcome.changes:
        console.print(Text("\nChanges against the baseline", style="bold"))
        console.print(comparison.table(outcome.pairs, outcome.tolerance, only_changed=True))
        changed = [p for p in outcome.pairs if any(c.scenario == p.key[0] and
                                                   c.sequence == p.key[1]
                                                   for c in outcome.changes)]
        for line in comparison.sequences(changed, width):
            console.print(Text(line), soft_wrap=False, overflow="fold")
    for name in outcome.without_baseline:
        console.print(f"no baseline for scenario {name!r}: nothing compared")
    console.print(Text(summary(outcome), style="bold red" if outcome.exit_code else "bold green"))
    return buffer.getvalue()


def markdown(outcome: Outcome) -> str:
    ok = int(outcome.exit_code) == 0
    lines = [f"## recompile-probe check: {'✅ passed' if ok else '❌ failed'}", "",
             summary(outcome), ""]
    if outcome.violations():
        lines += ["| scenario | sequence | strategy | budget | limit | actual | why |",
                  "|---|---|---|---|---|---|---|"]
        for report, run, v in outcome.violations():
            # a reason can span lines (one per failing cache entry): a table cell cannot
            why = "<br>".join(r.replace("|", "\\|").replace("\n", "<br>") for r in v.reasons)
            lines.append(f"| {report.scenario.name} | {run.sequence_name} | {run.strategy} | "
                         f"`{v.budget}` | {v.limit} | {_actual(v.actual)} | {why} |")
        lines.append("")
    if outcome.changes:
        lines += ["### Changes against the baseline", "",
                  comparison.markdown(outcome.pairs, outcome.tolerance)]
    for scenario, error in outcome.failures:
        lines.append(f"- **{scenario.name}** could not run: {error.message}")
    return "\n".join(lines) + "\n"
